//! References a file makes: call sites (with the receiver they go
//! through), base classes and implemented traits, and imports.

use super::defs::each;
use super::{capture, enclosing, line_of, text, Matches, Span};
use crate::store::Symbol;

/// Longest receiver text kept.
const RECEIVER_CHARS: usize = 100;

/// What a reference is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefKind {
    /// A call of `name`.
    Call,
    /// `name` is a base class or an implemented trait/interface of `scope`.
    Base,
}

impl RefKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RefKind::Call => "call",
            RefKind::Base => "base",
        }
    }
}

/// A name used by the code, to be resolved to definitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ref {
    pub(crate) kind: RefKind,
    /// The innermost enclosing definition's id; `None` at top level. For a
    /// base, the type that inherits.
    pub(crate) scope: Option<String>,
    pub(crate) name: String,
    /// The expression the call goes through (`self`, `os.path`, `Foo`), as
    /// written.
    pub(crate) receiver: Option<String>,
    pub(crate) line: u32,
    pub(crate) col: u32,
}

/// An import: `module` as written, the `name` taken from it (`None` for the
/// module itself), and the `local` name it is bound to (`None` when it
/// binds nothing, as a C `#include`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Import {
    pub(crate) scope: Option<String>,
    pub(crate) module: String,
    pub(crate) name: Option<String>,
    pub(crate) local: Option<String>,
    pub(crate) line: u32,
    pub(crate) col: u32,
    /// Start byte of the import statement (for the def-use analysis).
    pub(crate) stmt_start: usize,
}

/// Calls and bases of a file.
pub(super) fn references(
    lang: crate::lang::Lang,
    matches: &Matches<'_>,
    source: &[u8],
    symbols: &[Symbol],
    spans: &[Span],
) -> Vec<Ref> {
    let mut out = Vec::new();
    each(&matches.calls, |caps| {
        let Some(callee) = capture(caps, "callee") else {
            return;
        };
        // A path call (`Vec::new()`, `std::max()`) goes through a type or
        // module, never a variable: its receiver ends with `::`. Only Rust
        // and C++ write them (and asking a node for its parent walks down
        // from the root, so the others do not ask).
        let path_call = matches!(lang, crate::lang::Lang::Rust | crate::lang::Lang::Cpp)
            && callee
                .parent()
                .is_some_and(|p| matches!(p.kind(), "scoped_identifier" | "qualified_identifier"));
        let receiver = capture(caps, "receiver").map(|n| {
            let mut r: String = text(n, source).chars().take(RECEIVER_CHARS).collect();
            if path_call {
                r.push_str("::");
            }
            r
        });
        let at = callee.start_byte();
        out.push(Ref {
            kind: RefKind::Call,
            scope: enclosing(spans, at).map(|i| symbols[i].id.clone()),
            name: text(callee, source).to_owned(),
            receiver,
            line: line_of(callee),
            col: callee.start_position().column as u32 + 1,
        });
    });
    {
        each(&matches.bases, |caps| {
            let get = |name: &str| capture(caps, name);
            let (Some(def), Some(base)) = (get("def"), get("base")) else {
                return;
            };
            // The type is the definition that starts where the match does
            // (for a Go `type X struct`, the one whose span holds it).
            let owner = spans
                .iter()
                .position(|&(s, _)| s == def.start_byte())
                .or_else(|| enclosing(spans, base.start_byte()));
            out.push(Ref {
                kind: RefKind::Base,
                scope: owner.map(|i| symbols[i].id.clone()),
                name: text(base, source).to_owned(),
                receiver: None,
                line: line_of(base),
                col: base.start_position().column as u32 + 1,
            });
        });
    }
    out
}

/// Imports of a file.
pub(super) fn imports(
    lang: crate::lang::Lang,
    matches: &Matches<'_>,
    source: &[u8],
    symbols: &[Symbol],
    spans: &[Span],
) -> Vec<Import> {
    let mut out = Vec::new();
    each(&matches.imports, |caps| {
        let get = |name: &str| capture(caps, name);
        let (Some(stmt), Some(module)) = (get("import"), get("module")) else {
            return;
        };
        let module_text = text(module, source).trim().to_owned();
        let name = get("name").map(|n| text(n, source).to_owned());
        let local = match (get("alias"), &name) {
            (Some(alias), _) => Some(text(alias, source).to_owned()),
            (None, Some(name)) => Some(name.rsplit(['.', ':']).next().unwrap_or(name).to_owned()),
            // `import os.path` binds `os`; a Go import binds the last
            // segment of its path; an include binds nothing.
            (None, None) => match lang {
                crate::lang::Lang::Python => module_text.split('.').next().map(str::to_owned),
                crate::lang::Lang::Go => module_text.rsplit('/').next().map(str::to_owned),
                _ => None,
            },
        };
        // Where the local name is written (the alias, else the name, else
        // the module), so each binding of one statement has its own place.
        let at = get("alias").or_else(|| get("name")).unwrap_or(module);
        out.push(Import {
            scope: enclosing(spans, stmt.start_byte()).map(|i| symbols[i].id.clone()),
            module: module_text,
            name,
            local,
            line: line_of(at),
            col: at.start_position().column as u32 + 1,
            stmt_start: stmt.start_byte(),
        });
    });
    out
}
