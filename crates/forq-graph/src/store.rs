//! The SQLite schema, the rows it holds, and the one writer.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::extract::FileFacts;

/// The schema version this build reads and writes (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 5;

/// Secondary indexes: dropped for a cold load and built once after it
/// (cheaper than keeping them up to date row by row).
const INDEXES: &str = "
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file, line);
CREATE INDEX IF NOT EXISTS symbols_qualname ON symbols(qualname);
CREATE INDEX IF NOT EXISTS refs_file ON refs(file);
CREATE INDEX IF NOT EXISTS refs_name ON refs(name);
CREATE INDEX IF NOT EXISTS refs_bases ON refs(scope) WHERE kind = 'base';
CREATE INDEX IF NOT EXISTS refs_receiver ON refs(receiver) WHERE receiver IS NOT NULL;
CREATE INDEX IF NOT EXISTS imports_file ON imports(file);
CREATE INDEX IF NOT EXISTS edges_src ON edges(src, kind);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst, kind);
CREATE INDEX IF NOT EXISTS edges_origin ON edges(kind, origin);
CREATE INDEX IF NOT EXISTS edges_file ON edges(file);
CREATE INDEX IF NOT EXISTS statements_file ON statements(file, line);
CREATE INDEX IF NOT EXISTS vars_name ON vars(name);
CREATE INDEX IF NOT EXISTS defuse_def ON defuse(def);
";

/// Tables. Every row names its file, so a file's rows go in one delete;
/// no foreign keys (a cascade would cost an index per child on every
/// write and the writer deletes explicitly instead).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path   TEXT PRIMARY KEY,
    lang   TEXT NOT NULL,
    hash   TEXT NOT NULL,
    size   INTEGER NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS symbols (
    id        TEXT PRIMARY KEY,
    file      TEXT NOT NULL,
    name      TEXT NOT NULL,
    qualname  TEXT NOT NULL,
    kind      TEXT NOT NULL,
    line      INTEGER NOT NULL,
    end_line  INTEGER NOT NULL,
    parent    TEXT,
    signature TEXT NOT NULL,
    doc       TEXT,
    test      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS refs (
    id       INTEGER PRIMARY KEY,
    file     TEXT NOT NULL,
    kind     TEXT NOT NULL,
    scope    TEXT,
    name     TEXT NOT NULL,
    receiver TEXT,
    line     INTEGER NOT NULL,
    col      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS imports (
    id     INTEGER PRIMARY KEY,
    file   TEXT NOT NULL,
    scope  TEXT,
    module TEXT NOT NULL,
    name   TEXT,
    local  TEXT,
    line   INTEGER NOT NULL,
    col    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS edges (
    file       TEXT NOT NULL,
    origin     INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    src        TEXT NOT NULL,
    dst        TEXT NOT NULL,
    confidence TEXT NOT NULL,
    candidates INTEGER NOT NULL,
    line       INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS statements (
    id       INTEGER PRIMARY KEY,
    file     TEXT NOT NULL,
    scope    TEXT,
    kind     TEXT NOT NULL,
    line     INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    text     TEXT NOT NULL
);
-- Clustered by statement: a file's rows are contiguous, no extra index.
CREATE TABLE IF NOT EXISTS vars (
    stmt  INTEGER NOT NULL,
    name  TEXT NOT NULL,
    write INTEGER NOT NULL,
    line  INTEGER NOT NULL,
    col   INTEGER NOT NULL,
    PRIMARY KEY (stmt, line, col, write)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS defuse (
    def  INTEGER NOT NULL,
    use  INTEGER NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (use, def, name)
) WITHOUT ROWID;
-- Every occurrence of a name, with its role.
CREATE VIEW IF NOT EXISTS occurrences (file, line, col, name, role, scope) AS
    SELECT file, line, 1, name, CASE WHEN test THEN 'test' ELSE 'definition' END, parent FROM symbols
    UNION ALL SELECT file, line, col, name, 'reference', scope FROM refs
    UNION ALL SELECT file, line, col, COALESCE(local, module), 'import', scope FROM imports
    UNION ALL SELECT s.file, v.line, v.col, v.name, CASE WHEN v.write THEN 'write' ELSE 'read' END, s.scope
        FROM vars v JOIN statements s ON s.id = v.stmt;
-- A test and what it calls directly; deeper coverage walks the call edges.
CREATE VIEW IF NOT EXISTS covers (test, symbol, confidence) AS
    SELECT e.src, e.dst, e.confidence FROM edges e JOIN symbols t ON t.id = e.src
    WHERE e.kind = 'calls' AND t.test;
";

/// The tables whose rows name their file.
const FILE_TABLES: [&str; 6] = ["files", "symbols", "refs", "imports", "edges", "statements"];

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
    /// `interface`, `module`, `constant`, `type`, `macro`, `test`.
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
    /// The doc comment or docstring, whitespace collapsed, cut to 500
    /// characters.
    pub doc: Option<String>,
    /// A test by its ecosystem's convention (or a test module).
    pub test: bool,
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
    /// Only tests.
    pub tests: bool,
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
    /// Only tests.
    pub fn tests(mut self) -> Self {
        self.tests = true;
        self
    }
}

pub(crate) const SYMBOL_COLUMNS: &str =
    "id, name, qualname, kind, file, line, end_line, parent, signature, doc, test";

pub(crate) fn row_symbol(r: &rusqlite::Row<'_>) -> rusqlite::Result<Symbol> {
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
        doc: r.get(9)?,
        test: r.get(10)?,
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

/// A resolved edge, ready to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EdgeRow {
    pub(crate) file: String,
    /// The `refs` row (calls, inherits) or `imports` row (imports) it
    /// was resolved from.
    pub(crate) origin: i64,
    pub(crate) kind: &'static str,
    pub(crate) src: String,
    pub(crate) dst: String,
    pub(crate) confidence: &'static str,
    pub(crate) candidates: usize,
    pub(crate) line: u32,
}

pub(crate) struct Store {
    pub(crate) conn: Connection,
    path: PathBuf,
}

impl Store {
    pub(crate) fn open(path: &Path) -> Result<Store> {
        let db = |source: rusqlite::Error| Error::Db {
            path: path.to_path_buf(),
            source: Box::new(source),
        };
        if let Some(dir) = path.parent() {
            let io = |op| {
                move |source| Error::Io {
                    op,
                    path: dir.to_path_buf(),
                    source,
                }
            };
            std::fs::create_dir_all(dir).map_err(io("create the index directory"))?;
            // forq's own directory in a repository keeps itself out of git.
            let ignore = dir.join(".gitignore");
            if dir.file_name().is_some_and(|n| n == ".forq") && !ignore.exists() {
                std::fs::write(&ignore, "*\n").map_err(io("write .gitignore in"))?;
            }
        }
        let conn = Connection::open(path).map_err(db)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(db)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(db)?;
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
        if version != 0 && version < SCHEMA_VERSION {
            // An older index: its tables lack what this version stores.
            // Drop them all; the next update parses every file again.
            let tx = conn.unchecked_transaction().map_err(db)?;
            let objects: Vec<(String, String)> = {
                let mut stmt = tx
                    .prepare("SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'")
                    .map_err(db)?;
                let rows = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(db)?;
                rows.collect::<rusqlite::Result<_>>().map_err(db)?
            };
            for (kind, name) in objects {
                tx.execute_batch(&format!(
                    "DROP {} IF EXISTS \"{name}\"",
                    kind.to_uppercase()
                ))
                .map_err(db)?;
            }
            tx.commit().map_err(db)?;
        }
        conn.execute_batch(SCHEMA).map_err(db)?;
        conn.execute_batch(INDEXES).map_err(db)?;
        conn.pragma_update(None, "user_version", SCHEMA_VERSION)
            .map_err(db)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn db(&self) -> impl Fn(rusqlite::Error) -> Error + '_ {
        |source| Error::Db {
            path: self.path.clone(),
            source: Box::new(source),
        }
    }

    /// The database file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Every file's hash.
    pub(crate) fn hashes(&self) -> Result<std::collections::HashMap<String, String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, hash FROM files")
            .map_err(self.db())?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }

    pub(crate) fn meta(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(self.db())
    }

    /// Names of the symbols a file defines now.
    pub(crate) fn symbol_keys(&self, file: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, name FROM symbols WHERE file = ?1")
            .map_err(self.db())?;
        let rows = stmt
            .query_map([file], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }

    /// Drops the secondary indexes (before a cold load into empty tables).
    pub(crate) fn drop_indexes(&self) -> Result<()> {
        let names: Vec<String> = INDEXES
            .lines()
            .filter_map(|l| l.strip_prefix("CREATE INDEX IF NOT EXISTS "))
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_owned)
            .collect();
        for name in names {
            self.conn
                .execute_batch(&format!("DROP INDEX IF EXISTS {name}"))
                .map_err(self.db())?;
        }
        Ok(())
    }

    /// Builds the secondary indexes that are missing.
    pub(crate) fn create_indexes(&self) -> Result<()> {
        self.conn.execute_batch(INDEXES).map_err(self.db())
    }

    /// Deletes every row of a file (inside the caller's transaction).
    pub(crate) fn delete_file(tx: &Connection, path: &str) -> rusqlite::Result<()> {
        // Variables and def-use links belong to the file's statements (a
        // def-use link never leaves its file): go through them.
        tx.prepare_cached(
            "DELETE FROM vars WHERE stmt IN (SELECT id FROM statements WHERE file = ?1)",
        )?
        .execute([path])?;
        tx.prepare_cached(
            "DELETE FROM defuse WHERE use IN (SELECT id FROM statements WHERE file = ?1)",
        )?
        .execute([path])?;
        for table in FILE_TABLES {
            let column = if table == "files" { "path" } else { "file" };
            tx.prepare_cached(&format!("DELETE FROM {table} WHERE {column} = ?1"))?
                .execute([path])?;
        }
        Ok(())
    }

    /// Writes a file's rows (inside the caller's transaction), replacing
    /// what was there. `fresh`: the tables hold nothing of this file (a
    /// cold load), so there is nothing to delete first.
    pub(crate) fn write_file(
        tx: &Connection,
        row: &FileRow,
        facts: &FileFacts,
        fresh: bool,
    ) -> rusqlite::Result<()> {
        if !fresh {
            Self::delete_file(tx, &row.path)?;
        }
        tx.prepare_cached(
            "INSERT INTO files (path, lang, hash, size, status) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            row.path,
            row.lang,
            row.hash,
            row.size as i64,
            row.status
        ])?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO symbols (id, file, name, qualname, kind, line, end_line, parent, signature, doc, test)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )?;
        for s in &facts.symbols {
            insert.execute(params![
                s.id,
                s.file,
                s.name,
                s.qualname,
                s.kind,
                s.line,
                s.end_line,
                s.parent,
                s.signature,
                s.doc,
                s.test
            ])?;
        }
        let mut insert = tx.prepare_cached(
            "INSERT INTO refs (file, kind, scope, name, receiver, line, col) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for r in &facts.refs {
            insert.execute(params![
                row.path,
                r.kind.as_str(),
                r.scope,
                r.name,
                r.receiver,
                r.line,
                r.col
            ])?;
        }
        let mut insert = tx.prepare_cached(
            "INSERT INTO imports (file, scope, module, name, local, line, col) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        for i in &facts.imports {
            insert.execute(params![
                row.path, i.scope, i.module, i.name, i.local, i.line, i.col
            ])?;
        }
        let mut ids = Vec::with_capacity(facts.statements.len());
        let mut insert = tx.prepare_cached(
            "INSERT INTO statements (file, scope, kind, line, end_line, text) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?;
        for s in &facts.statements {
            ids.push(insert.insert(params![
                row.path, s.scope, s.kind, s.line, s.end_line, s.text
            ])?);
        }
        let mut insert = tx.prepare_cached(
            "INSERT OR IGNORE INTO vars (stmt, name, write, line, col) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for v in &facts.vars {
            insert.execute(params![
                ids[v.stmt as usize],
                v.name,
                v.write,
                v.line,
                v.col
            ])?;
        }
        let mut insert =
            tx.prepare_cached("INSERT INTO defuse (def, use, name) VALUES (?1, ?2, ?3)")?;
        for d in &facts.defuse {
            insert.execute(params![ids[d.def as usize], ids[d.use_ as usize], d.name])?;
        }
        Ok(())
    }

    /// Writes resolved edges (inside the caller's transaction).
    pub(crate) fn write_edges(tx: &Connection, edges: &[EdgeRow]) -> rusqlite::Result<()> {
        let mut insert = tx.prepare_cached(
            "INSERT INTO edges (file, origin, kind, src, dst, confidence, candidates, line)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for e in edges {
            insert.execute(params![
                e.file,
                e.origin,
                e.kind,
                e.src,
                e.dst,
                e.confidence,
                e.candidates as i64,
                e.line
            ])?;
        }
        Ok(())
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

    /// Symbols by a query with one text parameter.
    pub(crate) fn symbols_where(&self, condition: &str, param: &str) -> Result<Vec<Symbol>> {
        let sql = format!(
            "SELECT {SYMBOL_COLUMNS} FROM symbols WHERE {condition} ORDER BY file, line, id"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(self.db())?;
        let rows = stmt.query_map([param], row_symbol).map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }

    /// The symbol with this id.
    pub(crate) fn symbol(&self, id: &str) -> Result<Option<Symbol>> {
        Ok(self.symbols_where("id = ?1", id)?.into_iter().next())
    }

    pub(crate) fn symbols(&self, filter: &SymbolFilter) -> Result<Vec<Symbol>> {
        let sql = format!(
            "SELECT {SYMBOL_COLUMNS} FROM symbols
             WHERE (?1 IS NULL OR file = ?1) AND (?2 IS NULL OR name = ?2) AND (?3 IS NULL OR kind = ?3) AND (?4 = 0 OR test)
             ORDER BY file, line, id"
        );
        let mut stmt = self.conn.prepare(&sql).map_err(self.db())?;
        let rows = stmt
            .query_map(
                params![filter.file, filter.name, filter.kind, filter.tests],
                row_symbol,
            )
            .map_err(self.db())?;
        rows.collect::<rusqlite::Result<_>>().map_err(self.db())
    }
}
