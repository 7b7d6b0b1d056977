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
}

impl Lang {
    /// Every language, in a stable order.
    pub const ALL: [Lang; 2] = [Lang::Python, Lang::Rust];

    /// The language of a file name, by extension.
    pub fn of_path(path: &std::path::Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "py" | "pyi" => Some(Lang::Python),
            "rs" => Some(Lang::Rust),
            _ => None,
        }
    }

    /// The name stored in the index.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Rust => "rust",
        }
    }

    /// The tree-sitter grammar.
    pub(crate) fn grammar(self) -> tree_sitter::Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
        }
    }

    /// The definitions query source.
    pub(crate) fn defs_source(self) -> &'static str {
        match self {
            Lang::Python => include_str!("../queries/python/defs.scm"),
            Lang::Rust => include_str!("../queries/rust/defs.scm"),
        }
    }

    /// The definitions query, compiled.
    pub fn defs_query(self) -> Result<tree_sitter::Query> {
        tree_sitter::Query::new(&self.grammar(), self.defs_source()).map_err(|e| Error::Query {
            lang: self.name(),
            name: "defs.scm",
            message: e.to_string(),
        })
    }
}
