//! The languages the graph knows: grammar, file extensions, and the
//! queries (data in `queries/<lang>/`).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A supported language.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Lang {
    /// Python.
    Python,
    /// Rust.
    Rust,
    /// JavaScript (and JSX).
    JavaScript,
    /// TypeScript.
    TypeScript,
    /// TypeScript with JSX.
    Tsx,
    /// Go.
    Go,
    /// Java.
    Java,
    /// C.
    C,
    /// C++.
    Cpp,
}

impl Lang {
    /// Every language, in a stable order.
    pub const ALL: [Lang; 9] = [
        Lang::Python,
        Lang::Rust,
        Lang::JavaScript,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::Go,
        Lang::Java,
        Lang::C,
        Lang::Cpp,
    ];

    /// Where the first syntax error of `text` lies (1-based line, column),
    /// if it has one: the first ERROR or MISSING node, depth first.
    pub fn syntax_error(self, text: &str) -> Option<(usize, usize)> {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&self.grammar()).ok()?;
        let tree = parser.parse(text, None)?;
        let root = tree.root_node();
        if !root.has_error() {
            return None;
        }
        let mut cursor = root.walk();
        loop {
            let node = cursor.node();
            if node.is_error() || node.is_missing() {
                let p = node.start_position();
                return Some((p.row + 1, p.column + 1));
            }
            if node.has_error() && cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    let p = root.start_position();
                    return Some((p.row + 1, p.column + 1));
                }
            }
        }
    }

    /// The language of a file name, by extension.
    pub fn of_path(path: &std::path::Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "py" | "pyi" => Some(Lang::Python),
            "rs" => Some(Lang::Rust),
            "js" | "mjs" | "cjs" | "jsx" => Some(Lang::JavaScript),
            "ts" | "mts" | "cts" => Some(Lang::TypeScript),
            "tsx" => Some(Lang::Tsx),
            "go" => Some(Lang::Go),
            "java" => Some(Lang::Java),
            "c" | "h" => Some(Lang::C),
            "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" => Some(Lang::Cpp),
            _ => None,
        }
    }

    /// Languages whose code calls each other's definitions directly share
    /// a family (C with C++, JavaScript with TypeScript); name resolution
    /// never crosses families.
    pub fn family(self) -> &'static str {
        match self {
            Lang::C | Lang::Cpp => "c",
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx => "js",
            other => other.name(),
        }
    }

    /// The name stored in the index.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Rust => "rust",
            Lang::JavaScript => "javascript",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::Go => "go",
            Lang::Java => "java",
            Lang::C => "c",
            Lang::Cpp => "cpp",
        }
    }

    /// The tree-sitter grammar.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
            Lang::C => tree_sitter_c::LANGUAGE.into(),
            Lang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        }
    }

    /// The source of one of the language's queries (`queries/<lang>/<kind>.scm`);
    /// `None` when the language has none of that kind (Python and Go find
    /// tests by naming convention, C has no inheritance).
    pub fn query_source(self, kind: QueryKind) -> Option<&'static str> {
        use QueryKind::*;
        macro_rules! q {
            ($dir:literal, $file:literal) => {
                Some(include_str!(concat!(
                    "../queries/",
                    $dir,
                    "/",
                    $file,
                    ".scm"
                )))
            };
        }
        match (self, kind) {
            (Lang::Python, Defs) => q!("python", "defs"),
            (Lang::Python, Calls) => q!("python", "calls"),
            (Lang::Python, Imports) => q!("python", "imports"),
            (Lang::Python, Bases) => q!("python", "bases"),
            (Lang::Rust, Defs) => q!("rust", "defs"),
            (Lang::Rust, Calls) => q!("rust", "calls"),
            (Lang::Rust, Imports) => q!("rust", "imports"),
            (Lang::Rust, Bases) => q!("rust", "bases"),
            (Lang::Rust, Tests) => q!("rust", "tests"),
            (Lang::JavaScript, Defs) => Some(concat!(
                include_str!("../queries/javascript/defs.scm"),
                include_str!("../queries/javascript/bindings.scm")
            )),
            (Lang::JavaScript, Calls) => q!("javascript", "calls"),
            (Lang::JavaScript, Imports) => q!("javascript", "imports"),
            (Lang::JavaScript, Bases) => q!("javascript", "bases"),
            (Lang::JavaScript, Tests) => q!("javascript", "tests"),
            // TypeScript's grammar extends JavaScript's: calls, imports,
            // tests and assignment-bound definitions are JavaScript's files.
            (Lang::TypeScript | Lang::Tsx, Defs) => Some(concat!(
                include_str!("../queries/typescript/defs.scm"),
                include_str!("../queries/javascript/bindings.scm")
            )),
            (Lang::TypeScript | Lang::Tsx, Calls) => q!("javascript", "calls"),
            (Lang::TypeScript | Lang::Tsx, Imports) => q!("javascript", "imports"),
            (Lang::TypeScript | Lang::Tsx, Bases) => q!("typescript", "bases"),
            (Lang::TypeScript | Lang::Tsx, Tests) => q!("javascript", "tests"),
            (Lang::Go, Defs) => q!("go", "defs"),
            (Lang::Go, Calls) => q!("go", "calls"),
            (Lang::Go, Imports) => q!("go", "imports"),
            (Lang::Go, Bases) => q!("go", "bases"),
            (Lang::Java, Defs) => q!("java", "defs"),
            (Lang::Java, Calls) => q!("java", "calls"),
            (Lang::Java, Imports) => q!("java", "imports"),
            (Lang::Java, Bases) => q!("java", "bases"),
            (Lang::Java, Tests) => q!("java", "tests"),
            (Lang::C, Defs) => q!("c", "defs"),
            (Lang::C, Calls) => q!("c", "calls"),
            (Lang::C, Imports) => q!("c", "imports"),
            (Lang::C, Tests) => q!("c", "tests"),
            (Lang::Cpp, Defs) => q!("cpp", "defs"),
            (Lang::Cpp, Calls) => q!("cpp", "calls"),
            (Lang::Cpp, Imports) => q!("cpp", "imports"),
            (Lang::Cpp, Bases) => q!("cpp", "bases"),
            (Lang::Cpp, Tests) => q!("cpp", "tests"),
            _ => None,
        }
    }

    /// One of the language's queries, compiled; `Ok(None)` when it has none
    /// of that kind.
    pub fn query(self, kind: QueryKind) -> Result<Option<tree_sitter::Query>> {
        self.query_source(kind)
            .map(|source| self.compile(kind.file_name(), source))
            .transpose()
    }

    fn compile(self, name: &'static str, source: &str) -> Result<tree_sitter::Query> {
        tree_sitter::Query::new(&self.grammar(), source).map_err(|e| Error::Query {
            lang: self.name(),
            name,
            message: e.to_string(),
        })
    }
}

/// The kinds of query each language keeps in `queries/<lang>/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum QueryKind {
    /// `defs.scm`: definitions (`@def.<kind>`, `@name`, optional `@container`).
    Defs,
    /// `calls.scm`: call sites (`@callee`, optional `@receiver`).
    Calls,
    /// `imports.scm`: imports (`@import`, `@module`, optional `@name`, `@alias`).
    Imports,
    /// `bases.scm`: inheritance (`@def` the type, `@base` a parent's name).
    Bases,
    /// `tests.scm`: tests (`@test` with `@name`, or `@test.attr` marking the
    /// next item).
    Tests,
}

impl QueryKind {
    /// Every kind.
    pub const ALL: [QueryKind; 5] = [
        QueryKind::Defs,
        QueryKind::Calls,
        QueryKind::Imports,
        QueryKind::Bases,
        QueryKind::Tests,
    ];

    /// The query's file name.
    pub fn file_name(self) -> &'static str {
        match self {
            QueryKind::Defs => "defs.scm",
            QueryKind::Calls => "calls.scm",
            QueryKind::Imports => "imports.scm",
            QueryKind::Bases => "bases.scm",
            QueryKind::Tests => "tests.scm",
        }
    }
}

/// What the def-use analysis needs to know of a grammar: which nodes are
/// statements, which identifiers a construct binds, and which it reads.
#[derive(Debug)]
pub(crate) struct Syntax {
    /// Identifier node kinds that name variables.
    pub(crate) identifiers: &'static [&'static str],
    /// Node kinds whose named children are statements.
    pub(crate) blocks: &'static [&'static str],
    /// `(node kind, field)`: identifiers under that field are bound
    /// (written) by the node; an empty field matches any child.
    pub(crate) binds: &'static [(&'static str, &'static str)],
    /// Binding node kinds that also read what they write (`x += 1`, `i++`);
    /// a binding node with an `operator` other than `=`/`:=` does too.
    pub(crate) read_writes: &'static [&'static str],
    /// Node kinds a binding passes through (tuple patterns, declarators).
    pub(crate) patterns: &'static [&'static str],
    /// `(pattern kind, field)` that are read, not bound (default values, types).
    pub(crate) pattern_reads: &'static [(&'static str, &'static str)],
    /// Parameter lists: identifiers reaching one through patterns are parameters.
    pub(crate) params: &'static [&'static str],
    /// Binding node kinds of loop headers: their binding happens before the
    /// body and may not happen at all, so it never hides an earlier one.
    pub(crate) loop_binds: &'static [&'static str],
    /// Loop node kinds (a definition late in the body reaches its start).
    pub(crate) loops: &'static [&'static str],
    /// `(parent kind, field)` whose identifier is a name but not a variable
    /// (attribute and method names, keyword arguments, paths); an empty
    /// field matches any child.
    pub(crate) not_vars: &'static [(&'static str, &'static str)],
    /// Import statement kinds: they bind the locals the imports query found.
    pub(crate) imports: &'static [&'static str],
}

const PYTHON: Syntax = Syntax {
    identifiers: &["identifier"],
    blocks: &["block", "module"],
    binds: &[
        ("assignment", "left"),
        ("augmented_assignment", "left"),
        ("for_statement", "left"),
        ("for_in_clause", "left"),
        ("as_pattern", "alias"),
        ("named_expression", "name"),
    ],
    read_writes: &["augmented_assignment"],
    patterns: &[
        "pattern_list",
        "tuple_pattern",
        "list_pattern",
        "list_splat_pattern",
        "dictionary_splat_pattern",
        "as_pattern_target",
        "typed_parameter",
        "default_parameter",
        "typed_default_parameter",
    ],
    pattern_reads: &[
        ("default_parameter", "value"),
        ("typed_default_parameter", "value"),
        ("typed_parameter", "type"),
        ("typed_default_parameter", "type"),
    ],
    params: &["parameters", "lambda_parameters"],
    loop_binds: &["for_statement", "for_in_clause"],
    loops: &["for_statement", "while_statement"],
    not_vars: &[
        ("attribute", "attribute"),
        ("keyword_argument", "name"),
        ("function_definition", "name"),
        ("class_definition", "name"),
    ],
    imports: &[
        "import_statement",
        "import_from_statement",
        "future_import_statement",
    ],
};

const RUST: Syntax = Syntax {
    identifiers: &["identifier"],
    blocks: &["block", "source_file"],
    binds: &[
        ("let_declaration", "pattern"),
        ("let_condition", "pattern"),
        ("assignment_expression", "left"),
        ("compound_assignment_expr", "left"),
        ("for_expression", "pattern"),
        ("parameter", "pattern"),
        ("match_arm", "pattern"),
    ],
    read_writes: &["compound_assignment_expr"],
    patterns: &[
        "tuple_pattern",
        "mut_pattern",
        "ref_pattern",
        "reference_pattern",
        "tuple_struct_pattern",
        "struct_pattern",
        "field_pattern",
        "slice_pattern",
        "match_pattern",
        "or_pattern",
        "captured_pattern",
    ],
    pattern_reads: &[("tuple_struct_pattern", "type"), ("struct_pattern", "type")],
    params: &["closure_parameters"],
    loop_binds: &["for_expression"],
    loops: &["for_expression", "while_expression", "loop_expression"],
    not_vars: &[
        ("function_item", "name"),
        ("macro_invocation", "macro"),
        ("scoped_identifier", ""),
        ("generic_function", "function"),
    ],
    imports: &["use_declaration"],
};

const JAVASCRIPT: Syntax = Syntax {
    identifiers: &[
        "identifier",
        "shorthand_property_identifier",
        "shorthand_property_identifier_pattern",
    ],
    blocks: &[
        "statement_block",
        "program",
        "switch_case",
        "switch_default",
    ],
    binds: &[
        ("variable_declarator", "name"),
        ("assignment_expression", "left"),
        ("augmented_assignment_expression", "left"),
        ("update_expression", "argument"),
        ("for_in_statement", "left"),
        ("catch_clause", "parameter"),
        ("arrow_function", "parameter"),
    ],
    read_writes: &["augmented_assignment_expression", "update_expression"],
    patterns: &[
        "object_pattern",
        "array_pattern",
        "pair_pattern",
        "assignment_pattern",
        "rest_pattern",
        "required_parameter",
        "optional_parameter",
    ],
    pattern_reads: &[
        ("assignment_pattern", "right"),
        ("required_parameter", "value"),
        ("optional_parameter", "value"),
        ("pair_pattern", "key"),
    ],
    params: &["formal_parameters"],
    loop_binds: &["for_in_statement"],
    loops: &[
        "for_statement",
        "for_in_statement",
        "while_statement",
        "do_statement",
    ],
    not_vars: &[
        ("function_declaration", "name"),
        ("class_declaration", "name"),
        ("labeled_statement", "label"),
        ("import_specifier", ""),
    ],
    imports: &["import_statement"],
};

const GO: Syntax = Syntax {
    identifiers: &["identifier"],
    blocks: &[
        "block",
        "statement_list",
        "source_file",
        "expression_case",
        "default_case",
        "type_case",
        "communication_case",
    ],
    binds: &[
        ("short_var_declaration", "left"),
        ("assignment_statement", "left"),
        ("var_spec", "name"),
        ("const_spec", "name"),
        ("range_clause", "left"),
        ("parameter_declaration", "name"),
        ("variadic_parameter_declaration", "name"),
        ("inc_statement", ""),
        ("dec_statement", ""),
    ],
    read_writes: &["inc_statement", "dec_statement"],
    patterns: &["expression_list"],
    pattern_reads: &[],
    params: &[],
    loop_binds: &["range_clause"],
    loops: &["for_statement"],
    not_vars: &[
        ("function_declaration", "name"),
        ("labeled_statement", "label"),
    ],
    imports: &["import_declaration", "package_clause"],
};

const JAVA: Syntax = Syntax {
    identifiers: &["identifier"],
    blocks: &[
        "block",
        "constructor_body",
        "switch_block_statement_group",
        "program",
    ],
    binds: &[
        ("variable_declarator", "name"),
        ("assignment_expression", "left"),
        ("formal_parameter", "name"),
        ("spread_parameter", ""),
        ("catch_formal_parameter", "name"),
        ("enhanced_for_statement", "name"),
        ("update_expression", ""),
        ("resource", "name"),
        ("lambda_expression", "parameters"),
    ],
    read_writes: &["update_expression"],
    patterns: &["inferred_parameters", "variable_declarator"],
    pattern_reads: &[("variable_declarator", "value")],
    params: &[],
    loop_binds: &["enhanced_for_statement"],
    loops: &[
        "for_statement",
        "enhanced_for_statement",
        "while_statement",
        "do_statement",
    ],
    not_vars: &[
        ("method_invocation", "name"),
        ("field_access", "field"),
        ("method_declaration", "name"),
        ("constructor_declaration", "name"),
        ("class_declaration", "name"),
        ("marker_annotation", "name"),
        ("annotation", "name"),
        ("scoped_identifier", ""),
        ("labeled_statement", ""),
    ],
    imports: &["import_declaration", "package_declaration"],
};

const C: Syntax = Syntax {
    identifiers: &["identifier"],
    blocks: &["compound_statement", "translation_unit", "case_statement"],
    binds: &[
        ("init_declarator", "declarator"),
        ("declaration", "declarator"),
        ("parameter_declaration", "declarator"),
        ("assignment_expression", "left"),
        ("update_expression", "argument"),
        ("for_range_loop", "declarator"),
    ],
    read_writes: &["update_expression"],
    patterns: &[
        "pointer_declarator",
        "array_declarator",
        "reference_declarator",
        "parenthesized_declarator",
    ],
    pattern_reads: &[("array_declarator", "size")],
    params: &[],
    loop_binds: &["for_range_loop"],
    loops: &[
        "for_statement",
        "while_statement",
        "do_statement",
        "for_range_loop",
    ],
    not_vars: &[
        ("function_declarator", "declarator"),
        ("preproc_def", "name"),
        ("preproc_function_def", "name"),
        ("qualified_identifier", ""),
        ("preproc_ifdef", "name"),
    ],
    imports: &["preproc_include"],
};

impl Lang {
    /// The def-use analysis tables.
    pub(crate) fn syntax(self) -> &'static Syntax {
        match self {
            Lang::Python => &PYTHON,
            Lang::Rust => &RUST,
            Lang::JavaScript | Lang::TypeScript | Lang::Tsx => &JAVASCRIPT,
            Lang::Go => &GO,
            Lang::Java => &JAVA,
            Lang::C | Lang::Cpp => &C,
        }
    }
}
