//! What a file offers the repair templates: its distinct identifiers and
//! which are alike (an edit distance, or the same words), the names its
//! top level binds, its functions and their parameters, its named tuples
//! and the exceptions it raises.

use super::reach::{is_name, MAX_SIMILAR};

/// What the whole file offers the templates: its distinct identifiers
/// (where a similar name is looked for), its functions (what a value may
/// have been meant to pass through) and the exceptions it raises (what a
/// missing precondition raises).
#[derive(Debug, Default)]
pub(crate) struct FileIngredients {
    names: Vec<String>,
    /// Names imported under another (`width` of `import width as w`):
    /// written in the file, bound to nothing.
    renamed: Vec<String>,
    /// `(alias, original)` of each import under another name.
    aliases: Vec<(String, String)>,
    /// Names the module's top level binds: imports, definitions,
    /// assignments.
    top: Vec<String>,
    functions: Vec<FileFunction>,
    /// Named tuple types the module defines (`X = namedtuple(…)`, `class
    /// X(NamedTuple)`).
    pub(super) named_tuples: Vec<String>,
    /// Exception classes raised in the file, the most raised first.
    pub(crate) exceptions: Vec<String>,
}

/// A function of the file: its name and its parameters (`self`, `cls`
/// left out), of which the first `required` have no default.
#[derive(Debug)]
struct FileFunction {
    name: String,
    params: Vec<String>,
    required: usize,
}

impl FileIngredients {
    pub(crate) fn of(root: tree_sitter::Node<'_>, source: &str) -> FileIngredients {
        let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
        let mut names: Vec<String> = Vec::new();
        let mut functions = Vec::new();
        let mut raised: Vec<(usize, String)> = Vec::new();
        let mut renamed = Vec::new();
        let mut aliases = Vec::new();
        let mut stack = vec![root];
        while let Some(n) = stack.pop() {
            let kind = n.kind();
            if is_name(kind) {
                names.push(text(n).to_owned());
            }
            if kind == "aliased_import" {
                if let Some(original) = n.child_by_field_name("name") {
                    renamed.push(text(original).to_owned());
                    if let Some(alias) = n.child_by_field_name("alias") {
                        let last = text(original).rsplit('.').next().unwrap_or_default();
                        aliases.push((text(alias).to_owned(), last.to_owned()));
                    }
                }
            }
            // Functions a value can go through: not methods (a call of
            // one needs its receiver), not dunders.
            if matches!(kind, "function_definition" | "function_declaration") {
                let method = std::iter::successors(n.parent(), |p| p.parent())
                    .find(|p| p.kind().starts_with("class") || p.kind().starts_with("function"))
                    .is_some_and(|p| p.kind().starts_with("class"));
                let f = file_function(n, source).filter(|f| !f.name.starts_with("__"));
                if let Some(f) = f.filter(|_| !method) {
                    functions.push(f);
                }
            }
            // `raise E(...)`, `throw new E(...)`: the class raised.
            if matches!(kind, "raise_statement" | "throw_statement") {
                let class = n
                    .named_child(0)
                    .and_then(|v| {
                        v.child_by_field_name("function")
                            .or_else(|| v.child_by_field_name("constructor"))
                    })
                    .filter(|c| c.kind() == "identifier")
                    .map(text);
                if let Some(class) = class {
                    match raised.iter_mut().find(|(_, c)| c == class) {
                        Some((count, _)) => *count += 1,
                        None => raised.push((1, class.to_owned())),
                    }
                }
            }
            let mut c = n.walk();
            stack.extend(n.children(&mut c));
        }
        names.sort();
        names.dedup();
        // Most raised first; ties in the order met.
        raised.sort_by_key(|r| std::cmp::Reverse(r.0));
        FileIngredients {
            names,
            renamed,
            aliases,
            top: top_level_names(root, source),
            functions,
            named_tuples: named_tuples(root, source),
            exceptions: raised.into_iter().map(|(_, c)| c).collect(),
        }
    }

    /// The name `name` is imported as, where an import renames it
    /// (`width` for `wcwidth_width` of `import width as wcwidth_width`);
    /// else `name`.
    pub(crate) fn original<'n>(&'n self, name: &'n str) -> &'n str {
        self.aliases
            .iter()
            .find(|(alias, _)| alias == name)
            .map_or(name, |(_, original)| original.as_str())
    }

    /// Whether the module's top level binds `name` (imports it, defines
    /// it or assigns it).
    pub(crate) fn binds(&self, name: &str) -> bool {
        self.top.iter().any(|t| t == name)
    }

    /// Functions of the file taking exactly one argument that `name`
    /// could have been meant to go through: the function's name holds
    /// it (`_escape_title` for `title`) or its one parameter is called
    /// so. Never `within`, the function being repaired.
    pub(super) fn wrappers(&self, name: &str, within: Option<&str>) -> Vec<&str> {
        if name.chars().count() < 3 {
            return Vec::new();
        }
        let lower = name.to_lowercase();
        let mut found: Vec<&str> = self
            .functions
            .iter()
            .filter(|f| f.required == 1 && Some(f.name.as_str()) != within && f.name != name)
            .filter(|f| {
                f.name.to_lowercase().contains(&lower)
                    || f.params.first().is_some_and(|p| p == name)
            })
            .map(|f| f.name.as_str())
            .collect();
        found.sort();
        found.dedup();
        found.truncate(MAX_SIMILAR);
        found
    }

    /// Names of the file that `name`, which a `NameError` says is not
    /// defined, may have been meant as: those alike to it (as
    /// [`FileIngredients::similar`]), then those that end with it past an
    /// underscore (`_width` for `wcwidth_width`, bound by an import's
    /// `as`), most alike first.
    pub(crate) fn meant_for_undefined(&self, name: &str) -> Vec<&str> {
        let bare = name.trim_start_matches('_');
        let found: Vec<((bool, usize), &str)> = self
            .names
            .iter()
            .filter(|other| other.as_str() != name && !self.renamed.contains(other))
            .filter_map(|other| {
                let alike = alike(name, other);
                let ends = bare.len() >= 3
                    && other
                        .strip_suffix(bare)
                        .is_some_and(|head| head.ends_with('_'));
                // The module's own names first: a name used where it is not
                // defined is mostly one the module binds.
                let local = !self.top.contains(other);
                alike
                    .or(ends.then_some(usize::MAX))
                    .map(|d| ((local, d), other.as_str()))
            })
            .collect();
        closest(found)
    }

    /// Names of the file close to `name`, most alike first.
    pub(super) fn similar(&self, name: &str) -> Vec<&str> {
        let found: Vec<(usize, &str)> = self
            .names
            .iter()
            .filter(|other| other.as_str() != name)
            .filter_map(|other| alike(name, other).map(|d| (d, other.as_str())))
            .collect();
        closest(found)
    }
}

/// The [`MAX_SIMILAR`] names of `found` with the least distance (ties by
/// name).
fn closest<K: Ord>(mut found: Vec<(K, &str)>) -> Vec<&str> {
    found.sort();
    found
        .into_iter()
        .take(MAX_SIMILAR)
        .map(|(_, n)| n)
        .collect()
}

/// A Python module's top-level statements, a decorated definition as its
/// definition and an expression statement as its expression (an
/// assignment).
pub(crate) fn top_level(root: tree_sitter::Node<'_>) -> Vec<tree_sitter::Node<'_>> {
    let mut c = root.walk();
    root.named_children(&mut c)
        .map(|stmt| match stmt.kind() {
            "decorated_definition" => stmt.child_by_field_name("definition").unwrap_or(stmt),
            "expression_statement" => stmt.named_child(0).unwrap_or(stmt),
            _ => stmt,
        })
        .collect()
}

/// The names a Python module's top level binds: what it imports (the
/// alias where there is one), defines and assigns.
fn top_level_names(root: tree_sitter::Node<'_>, source: &str) -> Vec<String> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("").to_owned();
    let mut out = Vec::new();
    for stmt in top_level(root) {
        match stmt.kind() {
            "function_definition" | "class_definition" => {
                out.extend(stmt.child_by_field_name("name").map(text));
            }
            "assignment" => {
                out.extend(
                    stmt.child_by_field_name("left")
                        .filter(|l| l.kind() == "identifier")
                        .map(text),
                );
            }
            "import_statement" | "import_from_statement" => {
                let mut w = stmt.walk();
                for name in stmt.children_by_field_name("name", &mut w) {
                    let bound = match name.kind() {
                        "aliased_import" => name.child_by_field_name("alias"),
                        _ => name.named_child(name.named_child_count().saturating_sub(1) as u32),
                    };
                    out.extend(bound.map(text));
                }
            }
            _ => {}
        }
    }
    out
}

/// The named tuple types a Python module's top level defines: `X =
/// namedtuple(…)` (through any module) and `class X(NamedTuple)`.
fn named_tuples(root: tree_sitter::Node<'_>, source: &str) -> Vec<String> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let mut out = Vec::new();
    for stmt in top_level(root) {
        let name = match stmt.kind() {
            "assignment" => stmt
                .child_by_field_name("right")
                .and_then(|r| r.child_by_field_name("function"))
                .filter(|f| text(*f).ends_with("namedtuple"))
                .and(stmt.child_by_field_name("left")),
            "class_definition" => stmt
                .child_by_field_name("superclasses")
                .filter(|b| text(*b).contains("NamedTuple"))
                .and(stmt.child_by_field_name("name")),
            _ => None,
        };
        out.extend(
            name.filter(|n| n.kind() == "identifier")
                .map(|n| text(n).to_owned()),
        );
    }
    out
}

/// The lower-case words of a name: `normalize_integer_triplet` →
/// normalize, integer, triplet; `IntegerRGB` → integer, rgb.
pub(crate) fn words(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut out = Vec::new();
    let mut word = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1);
        // `fooBar`, and the end of an acronym: `HTMLRenderer` → html, renderer.
        let boundary = c.is_uppercase()
            && (prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
                || (prev.is_some_and(char::is_uppercase)
                    && next.is_some_and(|n| n.is_lowercase())));
        if (c == '_' || boundary) && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if c != '_' {
            word.extend(c.to_lowercase());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// How far apart two names are, when they are alike enough to be mistaken
/// for each other: equal but for underscores and case (0), else an edit
/// distance of one for names of four or more characters, two for eight
/// or more.
pub(super) fn alike(a: &str, b: &str) -> Option<usize> {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| *c != '_')
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    if norm(a) == norm(b) && !norm(a).is_empty() {
        return Some(0);
    }
    let shortest = a.chars().count().min(b.chars().count());
    let allowed = match shortest {
        0..=3 => return None,
        4..=7 => 1,
        _ => 2,
    };
    let d = edit_distance(a, b);
    (d <= allowed).then_some(d)
}

/// Levenshtein distance over chars.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The name and parameters of a function definition, if it is named.
fn file_function(def: tree_sitter::Node<'_>, source: &str) -> Option<FileFunction> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("").to_owned();
    let name = text(crate::brancher::syntax::function_name(def)?);
    let params = crate::brancher::syntax::parameters_of(def)?;
    let mut c = params.walk();
    let mut out = FileFunction {
        name,
        params: Vec::new(),
        required: 0,
    };
    for p in params.named_children(&mut c) {
        let (name, required) = match p.kind() {
            "identifier" => (Some(p), true),
            // `x: int` in Python; a destructured or typed one elsewhere.
            "typed_parameter" | "required_parameter" => (
                p.named_child(0)
                    .or_else(|| p.child_by_field_name("pattern"))
                    .filter(|n| n.kind() == "identifier"),
                true,
            ),
            // C and C++ `int *count`, Rust `count: usize`.
            "parameter_declaration" => (crate::brancher::syntax::declared_name(p), true),
            "parameter" => (
                p.child_by_field_name("pattern")
                    .filter(|n| n.kind() == "identifier"),
                true,
            ),
            "default_parameter" | "typed_default_parameter" => {
                (p.child_by_field_name("name"), false)
            }
            "assignment_pattern" | "optional_parameter" => (
                p.child_by_field_name("left")
                    .or_else(|| p.child_by_field_name("pattern")),
                false,
            ),
            // `*args`, `**kw`, `...rest`, `*`, `/`: not one argument.
            _ => (None, false),
        };
        let Some(name) = name.map(text) else {
            continue;
        };
        if matches!(name.as_str(), "self" | "cls" | "this") {
            continue;
        }
        if required {
            out.required += 1;
        }
        out.params.push(name);
    }
    Some(out)
}
