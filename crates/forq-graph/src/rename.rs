//! A mechanical rename through the graph: the definition, every call and
//! base-class reference resolved to it (bare, qualified or through a
//! receiver), the imports that name it, and in the files where the name is
//! bound to it (its own module, or an import without an alias) the places
//! that read it as a value. No model; a reference the graph could only
//! resolve by name to several definitions stops the rename, with the
//! places, rather than being guessed.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::params;
use serde::Serialize;

use crate::query::Confidence;
use crate::store::Symbol;
use crate::{Error, Index, Result};

/// One place the rename changes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub struct RenameEdit {
    /// The file.
    pub file: String,
    /// The line, 1-based.
    pub line: u32,
    /// The column of the name's first byte, 1-based.
    pub col: u32,
    /// `definition`, `call`, `base`, `import` or `read`.
    pub role: String,
}

/// A rename worked out against the indexed tree.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RenamePlan {
    /// The renamed definition's id (before the rename).
    pub symbol: String,
    /// The old name.
    pub old: String,
    /// The new name.
    pub new: String,
    /// Every place changed, by file and position.
    pub edits: Vec<RenameEdit>,
    /// Each changed file's new contents.
    #[serde(skip)]
    pub files: BTreeMap<String, String>,
}

impl Index {
    /// Works out renaming the definition `symbol` names (an id, qualified
    /// name, bare name or `FILE:LINE`; several matches are refused with
    /// the candidates) to `new`, from the files as indexed. Refused when
    /// `new` is not an identifier, when the definition's scope already
    /// has a `new`, when a reference could be another definition of the
    /// same name, or when a file no longer reads as the index says (index
    /// again).
    pub fn rename(&self, symbol: &str, new: &str) -> Result<RenamePlan> {
        self.check_complete()?;
        let sym = self.find_symbol(symbol)?;
        let refuse = |reason: String| Error::Rename {
            symbol: sym.id.clone(),
            reason,
        };
        if let Some(why) = self.refusal(&sym, new)? {
            return Err(refuse(why));
        }
        let mut places = self.places_naming(&sym)?;
        let mut texts = Texts {
            root: self.root(),
            read: BTreeMap::new(),
        };
        // The definition's name: its first whole word on the definition's
        // lines (past decorators and keywords).
        let text = texts.read(&sym.file)?;
        let def = (sym.line..=sym.end_line.max(sym.line))
            .find_map(|l| {
                let line = text.lines().nth(l as usize - 1)?;
                word_at(line, &sym.name, None).map(|c| (l, c))
            })
            .ok_or_else(|| {
                refuse(format!(
                    "{}:{} no longer defines {}: the index is older than the file; update it",
                    sym.file, sym.line, sym.name
                ))
            })?;
        places.insert(RenameEdit {
            file: sym.file.clone(),
            line: def.0,
            col: def.1,
            role: "definition".to_owned(),
        });
        // Each place checked against the file: the name must be there.
        let mut edits = Vec::new();
        for mut p in places {
            let text = texts.read(&p.file)?;
            let line = text.lines().nth(p.line as usize - 1).unwrap_or("");
            let Some(col) = word_at(line, &sym.name, Some(p.col)) else {
                return Err(refuse(format!(
                    "{}:{} does not read {} where the graph has it: the index is older than the file; update it",
                    p.file, p.line, sym.name
                )));
            };
            p.col = col;
            if !edits
                .iter()
                .any(|e: &RenameEdit| (&e.file, e.line, e.col) == (&p.file, p.line, p.col))
            {
                edits.push(p);
            }
        }
        let files = texts.renamed(&edits, &sym.name, new);
        Ok(RenamePlan {
            symbol: sym.id,
            old: sym.name,
            new: new.to_owned(),
            edits,
            files,
        })
    }

    /// Why `sym` cannot be renamed to `new`, if it cannot: `new` is not
    /// an identifier or is its name, the scope has a `new`, or a caller
    /// could be another definition of the name.
    fn refusal(&self, sym: &Symbol, new: &str) -> Result<Option<String>> {
        let identifier = new
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && new.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !identifier {
            return Ok(Some(format!("{new:?} is not an identifier")));
        }
        if new == sym.name {
            return Ok(Some(format!("it is already called {new}")));
        }
        let clash: i64 = self
            .store
            .conn
            .query_row(
                "SELECT COUNT(*) FROM symbols WHERE file = ?1 AND name = ?2 AND parent IS ?3",
                params![sym.file, new, sym.parent],
                |r| r.get(0),
            )
            .map_err(self.store.db())?;
        if clash > 0 {
            return Ok(Some(format!(
                "{} already defines {new} in the same scope",
                sym.file
            )));
        }
        let ambiguous: Vec<String> = self
            .callers(&sym.id, 1)?
            .items
            .into_iter()
            .filter(|e| matches!(e.confidence, Confidence::Ambiguous { .. }))
            .map(|e| format!("{}:{}", e.file, e.line))
            .collect();
        if !ambiguous.is_empty() {
            return Ok(Some(format!(
                "the graph cannot tell whether these call {} or another definition of {}: {}; rename or qualify them first",
                sym.id,
                sym.name,
                ambiguous.join(", ")
            )));
        }
        Ok(None)
    }

    /// Every place that names `sym` other than its definition: what the
    /// graph resolved to it, CommonJS bindings of it, and the value reads
    /// in the files where its name is bound to it.
    fn places_naming(&self, sym: &Symbol) -> Result<BTreeSet<RenameEdit>> {
        let mut places: BTreeSet<RenameEdit> = BTreeSet::new();
        let mut bound: BTreeSet<String> = BTreeSet::new();
        if sym.parent.is_none() {
            bound.insert(sym.file.clone());
        }
        for (file, line, col, role) in self.resolved_places(&sym.id)? {
            if role == "import" {
                bound.insert(file.clone());
            }
            places.insert(RenameEdit {
                file,
                line,
                col,
                role,
            });
        }
        // CommonJS binds an imported name by assignment (`const { f } =
        // require(…)`): in a file that uses the definition, that binding
        // is its import.
        let users: BTreeSet<String> = places.iter().map(|p| p.file.clone()).collect();
        for (file, line, col) in self.require_bindings(&sym.name, &users)? {
            bound.insert(file.clone());
            places.insert(RenameEdit {
                file,
                line,
                col,
                role: "import".to_owned(),
            });
        }
        for (file, line, col) in self.value_reads(&sym.name, &bound)? {
            if !places
                .iter()
                .any(|p| p.file == file && p.line == line && p.col == col)
            {
                places.insert(RenameEdit {
                    file,
                    line,
                    col,
                    role: "read".to_owned(),
                });
            }
        }
        Ok(places)
    }

    /// Calls, base-class references and imports the graph resolved to
    /// `id` (exactly or as the only definition of the name).
    fn resolved_places(&self, id: &str) -> Result<Vec<(String, u32, u32, String)>> {
        let db = self.store.db();
        let mut stmt = self
            .store
            .conn
            .prepare_cached(
                "SELECT r.file, r.line, r.col, r.kind FROM edges e JOIN refs r ON r.id = e.origin
                   WHERE e.dst = ?1 AND e.kind IN ('calls', 'inherits') AND e.confidence != 'ambiguous'
                 UNION
                 SELECT i.file, i.line, i.col, 'import' FROM edges e JOIN imports i ON i.id = e.origin
                   WHERE e.dst = ?1 AND e.kind = 'imports'",
            )
            .map_err(&db)?;
        let rows = stmt
            .query_map([id], |r| {
                let kind: String = r.get(3)?;
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    if kind == "import" { kind } else { role(&kind) },
                ))
            })
            .map_err(&db)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(&db)?;
        Ok(rows)
    }

    /// Module-level `require(…)` assignments of `name` in `files`.
    fn require_bindings(
        &self,
        name: &str,
        files: &BTreeSet<String>,
    ) -> Result<Vec<(String, u32, u32)>> {
        let mut out = Vec::new();
        for file in files {
            for v in self.var_occurrences(file, name)? {
                if v.write && v.scope.is_none() && v.text.contains("require(") {
                    out.push((file.clone(), v.line, v.col));
                }
            }
        }
        Ok(out)
    }

    /// Reads of `name` as a value in `files`, outside functions that
    /// assign a `name` of their own.
    fn value_reads(&self, name: &str, files: &BTreeSet<String>) -> Result<Vec<(String, u32, u32)>> {
        let mut out = Vec::new();
        for file in files {
            let occurrences = self.var_occurrences(file, name)?;
            // Scopes that bind a `name` of their own (a module-level
            // `require` binding is the imported name itself, not a rival).
            let binders: BTreeSet<Option<&str>> = occurrences
                .iter()
                .filter(|v| v.write && !(v.scope.is_none() && v.text.contains("require(")))
                .map(|v| v.scope.as_deref())
                .collect();
            for v in &occurrences {
                if !v.write && !binders.contains(&v.scope.as_deref()) {
                    out.push((file.clone(), v.line, v.col));
                }
            }
        }
        Ok(out)
    }
}

/// The edit role of a reference kind.
fn role(kind: &str) -> String {
    match kind {
        "base" => "base",
        _ => "call",
    }
    .to_owned()
}

/// The 1-based column of `word` as a whole word on `line`: at `col` when
/// it is there, else its only occurrence after `col` on the line (a
/// reference's column may point at its receiver), else — without a
/// column — its first occurrence.
fn word_at(line: &str, word: &str, col: Option<u32>) -> Option<u32> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let whole: Vec<usize> = line
        .match_indices(word)
        .map(|(i, _)| i)
        .filter(|&i| {
            !line[..i].chars().next_back().is_some_and(ident)
                && !line[i + word.len()..].chars().next().is_some_and(ident)
        })
        .collect();
    let Some(col) = col else {
        return whole.first().map(|&i| i as u32 + 1);
    };
    let at = col as usize - 1;
    if whole.contains(&at) {
        return Some(col);
    }
    let after: Vec<usize> = whole.into_iter().filter(|&i| i > at).collect();
    match after.as_slice() {
        [one] => Some(*one as u32 + 1),
        _ => None,
    }
}

/// The byte offset of `line`:`col` (both 1-based) in `text`.
fn offset(text: &str, line: u32, col: u32) -> Option<usize> {
    let mut start = 0;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if n as u32 + 1 == line {
            return Some(start + col as usize - 1);
        }
        start += l.len();
    }
    None
}

/// The files a rename reads, each once.
struct Texts<'a> {
    root: &'a std::path::Path,
    read: BTreeMap<String, String>,
}

impl Texts<'_> {
    fn read(&mut self, file: &str) -> Result<String> {
        if let Some(t) = self.read.get(file) {
            return Ok(t.clone());
        }
        let path = self.root.join(file);
        let t = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            op: "read",
            path,
            source,
        })?;
        self.read.insert(file.to_owned(), t.clone());
        Ok(t)
    }

    /// Each file with an edit, `old` replaced by `new` at every edit.
    fn renamed(self, edits: &[RenameEdit], old: &str, new: &str) -> BTreeMap<String, String> {
        let mut files = BTreeMap::new();
        for (file, text) in self.read {
            let mut out = text.clone();
            let mut at: Vec<usize> = edits
                .iter()
                .filter(|e| e.file == file)
                .filter_map(|e| offset(&text, e.line, e.col))
                .collect();
            at.sort_unstable();
            at.dedup();
            if at.is_empty() {
                continue;
            }
            for start in at.into_iter().rev() {
                out.replace_range(start..start + old.len(), new);
            }
            files.insert(file, out);
        }
        files
    }
}
