//! The SQLite schema and the rows it holds.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::extract::CallSite;

/// The schema version this build reads and writes (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files (
    path   TEXT PRIMARY KEY,
    lang   TEXT NOT NULL,
    hash   TEXT NOT NULL,
    size   INTEGER NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS symbols (
    id        TEXT PRIMARY KEY,
    file      TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
    name      TEXT NOT NULL,
    qualname  TEXT NOT NULL,
    kind      TEXT NOT NULL,
    line      INTEGER NOT NULL,
    end_line  INTEGER NOT NULL,
    parent    TEXT,
    signature TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
    file   TEXT NOT NULL REFERENCES files(path) ON DELETE CASCADE,
    caller TEXT,
    name   TEXT NOT NULL,
    line   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_caller ON calls(caller);
CREATE INDEX IF NOT EXISTS calls_name ON calls(name);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file);
";

/// A definition in the code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Symbol {
    /// A stable descriptor: `path#Container.name:kind`, with `~N` for the
    /// N-th definition of the same name in the same scope. Never the bare
    /// name: same-named functions stay distinct.
    pub id: String,
    /// The name as written.
    pub name: String,
    /// Names of the enclosing definitions and this one, joined by `.`.
    pub qualname: String,
    /// `class`, `function`, `method`, `struct`, `enum`, `trait`, `impl`,
    /// `module`, `constant`, `type`, `macro`.
    pub kind: String,
    /// Path relative to the indexed root, `/`-separated.
    pub file: String,
    /// First line, 1-based.
    pub line: u32,
    /// Last line, 1-based.
    pub end_line: u32,
    /// The enclosing symbol's id.
    pub parent: Option<String>,
    /// The definition's first line, trimmed and cut to 200 characters.
    pub signature: String,
}

/// Which symbols to return; empty fields match everything.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SymbolFilter {
    /// Only this file (relative path).
    pub file: Option<String>,
    /// Only this exact name.
    pub name: Option<String>,
    /// Only this kind.
    pub kind: Option<String>,
}

impl SymbolFilter {
    /// Only symbols of this file (relative path).
    pub fn file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }
    /// Only symbols with exactly this name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
    /// Only symbols of this kind.
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }
}

fn row_symbol(r: &rusqlite::Row<'_>) -> rusqlite::Result<Symbol> {
    Ok(Symbol {
        id: r.get(0)?,
        name: r.get(1)?,
        qualname: r.get(2)?,
        kind: r.get(3)?,
        file: r.get(4)?,
        line: r.get(5)?,
        end_line: r.get(6)?,
        parent: r.get(7)?,
        signature: r.get(8)?,
    })
}

/// One file row.
#[derive(Debug, Clone)]
pub(crate) struct FileRow {
    pub(crate) path: String,
    pub(crate) lang: String,
    pub(crate) hash: String,
    pub(crate) size: u64,
    pub(crate) status: &'static str,
}

pub(crate) struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    pub(crate) fn open(path: &Path) -> Result<Store> {
        let db = |source| Error::Db {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                op: "create the index directory",
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(db)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(db)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(db)?;
        if version > SCHEMA_VERSION {
            return Err(Error::Schema {
                path: path.to_path_buf(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        conn.execute_batch(SCHEMA).map_err(db)?;
        if version != 0 && version < SCHEMA_VERSION {
            // An older index lacks what this version stores for each file:
            // forget every file so the next update parses all of them.
            conn.execute("DELETE FROM files", []).map_err(db)?;
        }
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(db)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    fn db(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        |source| Error::Db {
            path: self.path.clone(),
            source,
        }
    }

    pub(crate) fn file_hash(&self, path: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT hash FROM files WHERE path = ?1", [path], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.db())
    }

    pub(crate) fn paths(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT path FROM files")
            .map_err(self.db())?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }

    /// Replaces a file and its symbols in one transaction: a reader sees the
    /// old file or the new one, and an interrupted run leaves the old.
    pub(crate) fn replace_file(
        &mut self,
        row: &FileRow,
        symbols: &[Symbol],
        calls: &[CallSite],
    ) -> Result<()> {
        let db = |source| Error::Db {
            path: self.path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(db)?;
        tx.execute("DELETE FROM files WHERE path = ?1", [&row.path])
            .map_err(db)?;
        tx.execute(
            "INSERT INTO files (path, lang, hash, size, status) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![row.path, row.lang, row.hash, row.size as i64, row.status],
        )
        .map_err(db)?;
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO symbols (id, file, name, qualname, kind, line, end_line, parent, signature)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .map_err(db)?;
            for s in symbols {
                insert
                    .execute(params![
                        s.id,
                        s.file,
                        s.name,
                        s.qualname,
                        s.kind,
                        s.line,
                        s.end_line,
                        s.parent,
                        s.signature
                    ])
                    .map_err(db)?;
            }
        }
        {
            let mut insert = tx
                .prepare("INSERT INTO calls (file, caller, name, line) VALUES (?1, ?2, ?3, ?4)")
                .map_err(db)?;
            for c in calls {
                insert
                    .execute(params![row.path, c.caller, c.name, c.line])
                    .map_err(db)?;
            }
        }
        tx.commit().map_err(db)
    }

    /// Definitions callable by `name` (functions and methods).
    pub(crate) fn callable_ids(&self, name: &str) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM symbols WHERE name = ?1 AND kind IN ('function', 'method') ORDER BY id")
            .map_err(self.db())?;
        let rows = stmt.query_map([name], |r| r.get(0)).map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }

    /// Calls made from inside `caller`: (name, file, line).
    pub(crate) fn calls_from(&self, caller: &str) -> Result<Vec<(String, String, u32)>> {
        self.call_rows(
            "SELECT name, file, line FROM calls WHERE caller = ?1 ORDER BY line, name",
            caller,
        )
    }

    /// Calls of `name` made from inside a definition: (caller, file, line).
    pub(crate) fn calls_of(&self, name: &str) -> Result<Vec<(String, String, u32)>> {
        self.call_rows(
            "SELECT caller, file, line FROM calls WHERE name = ?1 AND caller IS NOT NULL ORDER BY file, line",
            name,
        )
    }

    fn call_rows(&self, sql: &str, param: &str) -> Result<Vec<(String, String, u32)>> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(self.db())?;
        let rows = stmt
            .query_map([param], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }

    /// `(group, count)` rows of a grouping query.
    pub(crate) fn counts(&self, sql: &str) -> Result<Vec<(String, usize)>> {
        let mut stmt = self.conn.prepare(sql).map_err(self.db())?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as usize))
            })
            .map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }

    /// The symbol with this id.
    pub(crate) fn symbol(&self, id: &str) -> Result<Option<Symbol>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, name, qualname, kind, file, line, end_line, parent, signature FROM symbols WHERE id = ?1",
            )
            .map_err(self.db())?;
        stmt.query_row([id], row_symbol)
            .optional()
            .map_err(self.db())
    }

    pub(crate) fn remove_file(&mut self, path: &str) -> Result<()> {
        self.conn
            .execute("DELETE FROM files WHERE path = ?1", [path])
            .map(|_| ())
            .map_err(self.db())
    }

    pub(crate) fn symbols(&self, filter: &SymbolFilter) -> Result<Vec<Symbol>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, name, qualname, kind, file, line, end_line, parent, signature FROM symbols
                 WHERE (?1 IS NULL OR file = ?1) AND (?2 IS NULL OR name = ?2) AND (?3 IS NULL OR kind = ?3)
                 ORDER BY file, line, id",
            )
            .map_err(self.db())?;
        let rows = stmt
            .query_map(params![filter.file, filter.name, filter.kind], row_symbol)
            .map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }
}
