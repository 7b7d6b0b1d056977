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
    pub(crate) fn grammar(self) -> tree_sitter::Language {
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

    /// The definitions query source.
    pub(crate) fn defs_source(self) -> &'static str {
        match self {
            Lang::Python => include_str!("../queries/python/defs.scm"),
            Lang::Rust => include_str!("../queries/rust/defs.scm"),
            Lang::JavaScript => include_str!("../queries/javascript/defs.scm"),
            Lang::TypeScript | Lang::Tsx => include_str!("../queries/typescript/defs.scm"),
            Lang::Go => include_str!("../queries/go/defs.scm"),
            Lang::Java => include_str!("../queries/java/defs.scm"),
            Lang::C => include_str!("../queries/c/defs.scm"),
            Lang::Cpp => include_str!("../queries/cpp/defs.scm"),
        }
    }

    /// The call-sites query source.
    pub(crate) fn calls_source(self) -> &'static str {
        match self {
            Lang::Python => include_str!("../queries/python/calls.scm"),
            Lang::Rust => include_str!("../queries/rust/calls.scm"),
            Lang::JavaScript => include_str!("../queries/javascript/calls.scm"),
            Lang::TypeScript | Lang::Tsx => include_str!("../queries/typescript/calls.scm"),
            Lang::Go => include_str!("../queries/go/calls.scm"),
            Lang::Java => include_str!("../queries/java/calls.scm"),
            Lang::C => include_str!("../queries/c/calls.scm"),
            Lang::Cpp => include_str!("../queries/cpp/calls.scm"),
        }
    }

    /// The call-sites query, compiled.
    pub fn calls_query(self) -> Result<tree_sitter::Query> {
        self.compile("calls.scm", self.calls_source())
    }

    /// The definitions query, compiled.
    pub fn defs_query(self) -> Result<tree_sitter::Query> {
        self.compile("defs.scm", self.defs_source())
    }

    fn compile(self, name: &'static str, source: &str) -> Result<tree_sitter::Query> {
        tree_sitter::Query::new(&self.grammar(), source).map_err(|e| Error::Query {
            lang: self.name(),
            name,
            message: e.to_string(),
        })
    }
}
