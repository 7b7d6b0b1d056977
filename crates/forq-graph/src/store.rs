//! The SQLite schema, the rows it holds, and the one writer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::extract::FileFacts;
use crate::flow::codec;

/// The schema version this build reads and writes (`PRAGMA user_version`).
pub(crate) const SCHEMA_VERSION: i64 = 8;

/// Secondary indexes: dropped for a cold load and built once after it
/// (cheaper than keeping them up to date row by row). Those of the facts
/// ([`FACT_INDEXES`]) are built while the names resolve, the edges'
/// after; [`LOOKUP_INDEXES`] wait until an update needs them.
const INDEXES: &str = concat!(
    fact_indexes!(),
    "
CREATE INDEX IF NOT EXISTS edge_src ON edge(src);
CREATE INDEX IF NOT EXISTS edge_dst ON edge(dst);
"
);

/// The indexes of the tables a file's facts go to (`sym`, `ref`, `imp`).
const FACT_INDEXES: &str = fact_indexes!();

macro_rules! fact_indexes {
    () => {
        "
CREATE INDEX IF NOT EXISTS sym_name ON sym(name);
CREATE INDEX IF NOT EXISTS sym_file ON sym(fid, line);
CREATE INDEX IF NOT EXISTS sym_qualname ON sym(qualname);
CREATE INDEX IF NOT EXISTS ref_bases ON ref(scope) WHERE kind = 'base';"
    };
}
use fact_indexes;

/// References by name and by receiver: only an update that re-resolves
/// the references a changed definition may now answer (and the audit of
/// unused definitions) reads them, so a cold load leaves them out and the
/// first reader builds them ([`Store::ensure_lookup_indexes`]) — on
/// sympy, 0.17 s the cold load does not pay.
const LOOKUP_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS ref_name ON ref(name);
CREATE INDEX IF NOT EXISTS ref_receiver ON ref(receiver) WHERE receiver IS NOT NULL;";

/// Tables. A file's path, a symbol's id and an edge's end (a symbol id,
/// or a file path for module-level code) are stored once (`files`, `sym`,
/// `node`) and every other row names them by integer (`fid`, `sid`,
/// `nid`): the text repeated in every edge, reference and statement was
/// most of the database. A `sid` is only ever used inside its own file
/// (parents, scopes), so a file's rows are rewritten together; edges name
/// their ends by `nid`, which stays while the name is used, so an edge into
/// a re-indexed file stays valid. Every row names its file, so a file's
/// rows go in one delete; a file's references and imports, and the
/// edges resolved from them, are numbered within a range of ids of the
/// file's own ([`ref_id`], [`import_id`], [`edge_id`]), so that delete is
/// a range of the table's own key and they need no index by file or
/// origin (three indexes a cold load would build). No foreign keys (a
/// cascade would cost an index per child on every write and the writer
/// deletes explicitly instead). The views under the old names (`symbols`, `refs`,
/// `imports`, `edges`, `statements`) show the text again: the queries,
/// and anyone reading the database, use those.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    fid    INTEGER PRIMARY KEY,
    path   TEXT NOT NULL UNIQUE,
    lang   TEXT NOT NULL,
    hash   TEXT NOT NULL,
    size   INTEGER NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sym (
    sid       INTEGER PRIMARY KEY,
    id        TEXT NOT NULL UNIQUE,
    fid       INTEGER NOT NULL,
    name      TEXT NOT NULL,
    qualname  TEXT NOT NULL,
    kind      TEXT NOT NULL,
    line      INTEGER NOT NULL,
    end_line  INTEGER NOT NULL,
    parent    INTEGER,
    signature TEXT NOT NULL,
    doc       TEXT,
    test      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS ref (
    id       INTEGER PRIMARY KEY,
    fid      INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    scope    INTEGER,
    name     TEXT NOT NULL,
    receiver TEXT,
    line     INTEGER NOT NULL,
    col      INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS imp (
    id     INTEGER PRIMARY KEY,
    fid    INTEGER NOT NULL,
    scope  INTEGER,
    module TEXT NOT NULL,
    name   TEXT,
    local  TEXT,
    line   INTEGER NOT NULL,
    col    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS node (
    nid  INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
-- `eid`: the origin's id (a `ref` or `imp` row) times 64 plus the edge's
-- place among that origin's (see `edge_id`): a file's edges, and an
-- origin's, are one range of ids.
CREATE TABLE IF NOT EXISTS edge (
    eid        INTEGER PRIMARY KEY,
    kind       TEXT NOT NULL,
    src        INTEGER NOT NULL,
    dst        INTEGER NOT NULL,
    confidence TEXT NOT NULL,
    candidates INTEGER NOT NULL,
    line       INTEGER NOT NULL
);
-- A file's statements, variable occurrences and def-use links, in the
-- compact form of `flow/codec.rs` (counts beside it for the statistics).
CREATE TABLE IF NOT EXISTS flow (
    fid        INTEGER PRIMARY KEY,
    statements INTEGER NOT NULL,
    vars       INTEGER NOT NULL,
    links      INTEGER NOT NULL,
    data       BLOB NOT NULL
);
-- The files that bind or read a variable name, and whether they read it
-- (a query by name decodes only those files' flow).
CREATE TABLE IF NOT EXISTS flow_name (
    name  TEXT NOT NULL,
    fid   INTEGER NOT NULL,
    reads INTEGER NOT NULL,
    PRIMARY KEY (name, fid)
) WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS symbols (id, file, name, qualname, kind, line, end_line, parent, signature, doc, test) AS
    SELECT s.id, f.path, s.name, s.qualname, s.kind, s.line, s.end_line, p.id, s.signature, s.doc, s.test
    FROM sym s JOIN files f ON f.fid = s.fid LEFT JOIN sym p ON p.sid = s.parent;
-- A file's references and imports are found by their ids' range (the
-- equality serves a query that starts from the row, the range one that
-- starts from the file).
CREATE VIEW IF NOT EXISTS refs (id, file, kind, scope, name, receiver, line, col) AS
    SELECT r.id, f.path, r.kind, sc.id, r.name, r.receiver, r.line, r.col
    FROM ref r JOIN files f ON f.fid = r.fid AND r.id >= f.fid << 21 AND r.id < (f.fid + 1) << 21
    LEFT JOIN sym sc ON sc.sid = r.scope;
CREATE VIEW IF NOT EXISTS imports (id, file, scope, module, name, local, line, col) AS
    SELECT i.id, f.path, sc.id, i.module, i.name, i.local, i.line, i.col
    FROM imp i JOIN files f ON f.fid = i.fid AND i.id >= f.fid << 21 AND i.id < (f.fid + 1) << 21
    LEFT JOIN sym sc ON sc.sid = i.scope;
CREATE VIEW IF NOT EXISTS edges (file, origin, kind, src, dst, confidence, candidates, line) AS
    SELECT f.path, e.eid >> 6, e.kind, s.name, d.name, e.confidence, e.candidates, e.line
    FROM edge e JOIN files f ON f.fid = e.eid >> 27 JOIN node s ON s.nid = e.src JOIN node d ON d.nid = e.dst;
-- Every occurrence of a name as a definition, reference or import, with
-- its role (variables' reads and writes are in `flow`: `Index::flow`).
CREATE VIEW IF NOT EXISTS occurrences (file, line, col, name, role, scope) AS
    SELECT file, line, 1, name, CASE WHEN test THEN 'test' ELSE 'definition' END, parent FROM symbols
    UNION ALL SELECT file, line, col, name, 'reference', scope FROM refs
    UNION ALL SELECT file, line, col, COALESCE(local, module), 'import', scope FROM imports;
-- A test and what it calls directly; deeper coverage walks the call edges.
CREATE VIEW IF NOT EXISTS covers (test, symbol, confidence) AS
    SELECT s.name, d.name, e.confidence FROM edge e JOIN node s ON s.nid = e.src JOIN node d ON d.nid = e.dst
    JOIN sym t ON t.id = s.name WHERE e.kind = 'calls' AND t.test;
";

/// The tables whose rows are found by their `fid` column (a file's
/// references, imports and edges by their range of ids).
const FILE_TABLES: [&str; 2] = ["sym", "flow"];

/// Bits of a reference's or import's id below the file's number: a file's
/// references are numbered from `fid << FILE_ID_BITS`, its imports from
/// the middle of that range. A file is at most
/// [`MAX_FILE_BYTES`](crate::index::MAX_FILE_BYTES) (1 MiB), and a
/// reference or import takes at least a byte, so each half
/// ([`MAX_REFS_PER_FILE`] rows) holds all a file can have; the writer
/// keeps no more than that whatever the extraction gives.
const FILE_ID_BITS: u32 = 21;
/// Where a file's imports start within its range.
const IMPORTS_FROM: i64 = 1 << (FILE_ID_BITS - 1);
/// The references, and the imports, a file's range holds.
pub(crate) const MAX_REFS_PER_FILE: usize = IMPORTS_FROM as usize;
/// Bits of an edge's id below its origin's id: an origin has at most
/// [`MAX_CANDIDATES`](crate::resolve::MAX_CANDIDATES) edges.
const EDGE_ID_BITS: u32 = 6;
// The views' SQL spells these numbers out: 21, and 21 + 6 = 27.
const _: () = assert!(FILE_ID_BITS == 21 && FILE_ID_BITS + EDGE_ID_BITS == 27);
const _: () = assert!(crate::resolve::MAX_CANDIDATES <= 1 << EDGE_ID_BITS);
const _: () = assert!(crate::index::MAX_FILE_BYTES <= IMPORTS_FROM as u64);

/// The id of a file's `n`-th reference.
pub(crate) fn ref_id(fid: i64, n: usize) -> i64 {
    (fid << FILE_ID_BITS) + n as i64
}

/// The id of a file's `n`-th import.
pub(crate) fn import_id(fid: i64, n: usize) -> i64 {
    (fid << FILE_ID_BITS) + IMPORTS_FROM + n as i64
}

/// The id of the `n`-th edge resolved from the reference or import
/// `origin`.
pub(crate) fn edge_id(origin: i64, n: usize) -> i64 {
    (origin << EDGE_ID_BITS) + n as i64
}

/// The file (`fid`) whose reference or import has this id.
pub(crate) fn file_of_row(id: i64) -> i64 {
    id >> FILE_ID_BITS
}

/// The ids of a file's references, imports and edges: `[start, end)` of
/// each.
fn file_range(fid: i64) -> (i64, i64) {
    (fid << FILE_ID_BITS, (fid + 1) << FILE_ID_BITS)
}

/// Writes resolved edges in batches (inside the caller's transaction),
/// naming their ends in `node`. Every edge of an origin is in one batch,
/// and a batch's origins all come after the previous batch's, so each
/// edge goes at the end of the table and the numbering of ends does not
/// depend on how the edges were batched.
pub(crate) struct EdgeWriter<'c> {
    tx: &'c Connection,
    /// The node table held nothing (a full resolution): ends are numbered
    /// here, not looked up.
    empty: bool,
    nids: HashMap<String, i64>,
    numbered: i64,
    insert_edge: rusqlite::CachedStatement<'c>,
    insert_node: rusqlite::CachedStatement<'c>,
}

impl<'c> EdgeWriter<'c> {
    pub(crate) fn new(tx: &'c Connection, empty: bool) -> rusqlite::Result<EdgeWriter<'c>> {
        Ok(EdgeWriter {
            tx,
            empty,
            nids: HashMap::new(),
            numbered: 0,
            insert_edge: tx.prepare_cached(
                "INSERT INTO edge (eid, kind, src, dst, confidence, candidates, line)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?,
            insert_node: tx.prepare_cached(if empty {
                "INSERT INTO node (nid, name) VALUES (?1, ?2)"
            } else {
                "INSERT OR IGNORE INTO node (name) VALUES (?1)"
            })?,
        })
    }

    /// The `nid` of an edge end, added to `node` when new.
    fn nid(&mut self, name: &str) -> rusqlite::Result<i64> {
        if let Some(&n) = self.nids.get(name) {
            return Ok(n);
        }
        let n = if self.empty {
            self.numbered += 1;
            self.insert_node.execute(params![self.numbered, name])?;
            self.numbered
        } else {
            self.insert_node.execute([name])?;
            self.tx
                .prepare_cached("SELECT nid FROM node WHERE name = ?1")?
                .query_row([name], |r| r.get(0))?
        };
        self.nids.insert(name.to_owned(), n);
        Ok(n)
    }

    /// The ends written, by name (for the caller to free when it likes).
    pub(crate) fn into_names(self) -> HashMap<String, i64> {
        self.nids
    }

    pub(crate) fn write(&mut self, edges: &[EdgeRow]) -> rusqlite::Result<()> {
        // An origin's edges come one after another: the n-th of a run is
        // numbered n. Numbered first, written in the order of their ids.
        let mut order: Vec<(i64, &EdgeRow)> = Vec::with_capacity(edges.len());
        let mut run = (None, 0);
        for e in edges {
            run = match run {
                (Some(origin), n) if origin == e.origin => (Some(origin), n + 1),
                _ => (Some(e.origin), 0),
            };
            order.push((edge_id(e.origin, run.1), e));
        }
        order.sort_unstable_by_key(|(eid, _)| *eid);
        for (eid, e) in order {
            let (src, dst) = (self.nid(&e.src)?, self.nid(&e.dst)?);
            self.insert_edge.execute(params![
                eid,
                e.kind,
                src,
                dst,
                e.confidence,
                e.candidates as i64,
                e.line
            ])?;
        }
        Ok(())
    }
}

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
    /// The `refs` row (calls, inherits) or `imports` row (imports) it
    /// was resolved from (its file's, by the id's range).
    pub(crate) origin: i64,
    pub(crate) kind: &'static str,
    pub(crate) src: String,
    pub(crate) dst: String,
    pub(crate) confidence: &'static str,
    pub(crate) candidates: usize,
    pub(crate) line: u32,
}

/// Refuses `path` when it is a symbolic link: an index under a repository's
/// `.forq` is a name the repository could have committed as a link to
/// another database (a server's run store), whose tables a schema upgrade
/// would drop.
fn refuse_link(path: &Path) -> Result<()> {
    match path.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => Err(Error::Io {
            op: "open the index through",
            path: path.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "it is a symbolic link: forq never opens its files through a link; remove the link",
            ),
        }),
        _ => Ok(()),
    }
}

/// [`refuse_link`] on the database and the files SQLite keeps beside it.
fn refuse_links(db: &Path) -> Result<()> {
    refuse_link(db)?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        refuse_link(Path::new(&name))?;
    }
    Ok(())
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
            refuse_link(dir)?;
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
            if dir.file_name().is_some_and(|n| n == ".forq") {
                // `create_new` neither follows nor replaces a link planted
                // under that name.
                match std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&ignore)
                {
                    Ok(mut f) => std::io::Write::write_all(&mut f, b"*\n")
                        .map_err(io("write .gitignore in"))?,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(io("write .gitignore in")(e)),
                }
            }
        }
        refuse_links(path)?;
        // A link the check above raced with is refused by SQLite itself.
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags).map_err(db)?;
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
            .chain(LOOKUP_INDEXES.lines())
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

    /// Builds the indexes of the facts' tables that are missing (inside the
    /// caller's transaction).
    pub(crate) fn create_fact_indexes(tx: &Connection) -> rusqlite::Result<()> {
        tx.execute_batch(FACT_INDEXES)
    }

    /// Builds the secondary indexes that are missing, but for those that
    /// wait for a reader ([`Store::ensure_lookup_indexes`]).
    pub(crate) fn create_indexes(&self) -> Result<()> {
        self.conn.execute_batch(INDEXES).map_err(self.db())
    }

    /// Builds the indexes of references by name and by receiver if they
    /// are missing (a cold load leaves them out); a check of the schema
    /// when they are there.
    pub(crate) fn ensure_lookup_indexes(conn: &Connection) -> rusqlite::Result<()> {
        conn.execute_batch(LOOKUP_INDEXES)
    }

    /// Deletes every row of a file (inside the caller's transaction).
    pub(crate) fn delete_file(tx: &Connection, path: &str) -> rusqlite::Result<()> {
        let Some(fid) = Self::fid(tx, path)? else {
            return Ok(());
        };
        Self::delete_rows(tx, fid)?;
        tx.prepare_cached("DELETE FROM files WHERE fid = ?1")?
            .execute([fid])?;
        Ok(())
    }

    fn fid(tx: &Connection, path: &str) -> rusqlite::Result<Option<i64>> {
        tx.prepare_cached("SELECT fid FROM files WHERE path = ?1")?
            .query_row([path], |r| r.get(0))
            .optional()
    }

    /// Deletes the rows file `fid` holds, its `files` row aside.
    fn delete_rows(tx: &Connection, fid: i64) -> rusqlite::Result<()> {
        // The names of the file's variables are in its flow.
        let data: Option<Vec<u8>> = tx
            .prepare_cached("SELECT data FROM flow WHERE fid = ?1")?
            .query_row([fid], |r| r.get(0))
            .optional()?;
        if let Some(data) = data.filter(|d| !d.is_empty()) {
            let mut delete =
                tx.prepare_cached("DELETE FROM flow_name WHERE name = ?1 AND fid = ?2")?;
            match codec::names(&data) {
                Some(names) => {
                    for name in names {
                        delete.execute(params![name, fid])?;
                    }
                }
                // Unreadable: forget every name of the file, the slow way.
                None => {
                    tx.prepare_cached("DELETE FROM flow_name WHERE fid = ?1")?
                        .execute([fid])?;
                }
            }
        }
        // A file's edges are those resolved from its references and
        // imports: the range of ids of theirs.
        let (start, end) = file_range(fid);
        tx.prepare_cached("DELETE FROM edge WHERE eid >= ?1 AND eid < ?2")?
            .execute([edge_id(start, 0), edge_id(end, 0)])?;
        for table in ["ref", "imp"] {
            tx.prepare_cached(&format!("DELETE FROM {table} WHERE id >= ?1 AND id < ?2"))?
                .execute([start, end])?;
        }
        for table in FILE_TABLES {
            tx.prepare_cached(&format!("DELETE FROM {table} WHERE fid = ?1"))?
                .execute([fid])?;
        }
        Ok(())
    }

    /// The file's row, updated (its other rows deleted) or inserted; its
    /// number.
    fn file_row(tx: &Connection, row: &FileRow, fresh: bool) -> rusqlite::Result<i64> {
        let old_fid = if fresh {
            None
        } else {
            Self::fid(tx, &row.path)?
        };
        let Some(fid) = old_fid else {
            return tx
                .prepare_cached(
                    "INSERT INTO files (path, lang, hash, size, status) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .insert(params![
                    row.path,
                    row.lang,
                    row.hash,
                    row.size as i64,
                    row.status
                ]);
        };
        Self::delete_rows(tx, fid)?;
        tx.prepare_cached(
            "UPDATE files SET lang = ?2, hash = ?3, size = ?4, status = ?5 WHERE fid = ?1",
        )?
        .execute(params![
            fid,
            row.lang,
            row.hash,
            row.size as i64,
            row.status
        ])?;
        Ok(fid)
    }

    /// Writes a file's rows (inside the caller's transaction), replacing
    /// what was there. `fresh`: the tables hold nothing of this file (a
    /// cold load), so there is nothing to delete first. Returns the file's
    /// number (its references and imports are numbered from it:
    /// [`ref_id`], [`import_id`]).
    pub(crate) fn write_file(
        tx: &Connection,
        row: &FileRow,
        facts: &FileFacts,
        fresh: bool,
    ) -> rusqlite::Result<i64> {
        let fid = Self::file_row(tx, row, fresh)?;
        // Numbered before writing, so a parent's number is known whatever
        // the order.
        let first: i64 = tx
            .prepare_cached("SELECT COALESCE(MAX(sid), 0) + 1 FROM sym")?
            .query_row([], |r| r.get(0))?;
        let sids: HashMap<&str, i64> = facts
            .symbols
            .iter()
            .zip(first..)
            .map(|(s, sid)| (s.id.as_str(), sid))
            .collect();
        let sid_of = |id: &Option<String>| id.as_deref().and_then(|id| sids.get(id).copied());
        let mut insert = tx.prepare_cached(
            "INSERT INTO sym (sid, id, fid, name, qualname, kind, line, end_line, parent, signature, doc, test)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )?;
        for s in &facts.symbols {
            insert.execute(params![
                sids[s.id.as_str()],
                s.id,
                fid,
                s.name,
                s.qualname,
                s.kind,
                s.line,
                s.end_line,
                sid_of(&s.parent),
                s.signature,
                s.doc,
                s.test
            ])?;
        }
        let mut insert = tx.prepare_cached(
            "INSERT INTO ref (id, fid, kind, scope, name, receiver, line, col) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (n, r) in facts.refs.iter().enumerate() {
            insert.execute(params![
                ref_id(fid, n),
                fid,
                r.kind.as_str(),
                sid_of(&r.scope),
                r.name,
                r.receiver,
                r.line,
                r.col
            ])?;
        }
        let mut insert = tx.prepare_cached(
            "INSERT INTO imp (id, fid, scope, module, name, local, line, col) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (n, i) in facts.imports.iter().enumerate() {
            insert.execute(params![
                import_id(fid, n),
                fid,
                sid_of(&i.scope),
                i.module,
                i.name,
                i.local,
                i.line,
                i.col
            ])?;
        }
        if facts.flow {
            Self::write_flow(tx, fid, facts)?;
        }
        Ok(fid)
    }

    /// Writes a file's statements, variables and def-use (inside the
    /// caller's transaction). A file without statements gets an empty row:
    /// a row says its flow was computed, so it is not computed again.
    pub(crate) fn write_flow(tx: &Connection, fid: i64, facts: &FileFacts) -> rusqlite::Result<()> {
        let mut insert = tx.prepare_cached(
            "INSERT INTO flow (fid, statements, vars, links, data) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        let Some(flow) = codec::encode(facts) else {
            insert.execute(params![fid, 0, 0, 0, Vec::<u8>::new()])?;
            return Ok(());
        };
        insert.execute(params![
            fid,
            facts.statements.len() as i64,
            facts.vars.len() as i64,
            facts.defuse.len() as i64,
            flow.data
        ])?;
        let mut insert =
            tx.prepare_cached("INSERT INTO flow_name (name, fid, reads) VALUES (?1, ?2, ?3)")?;
        for (name, reads) in &flow.names {
            insert.execute(params![name, fid, reads])?;
        }
        Ok(())
    }

    /// Forgets edge ends no edge names any more (after an update that
    /// removed edges).
    pub(crate) fn forget_unused_nodes(tx: &Connection) -> rusqlite::Result<()> {
        tx.execute(
            "DELETE FROM node WHERE NOT EXISTS (SELECT 1 FROM edge WHERE src = nid)
             AND NOT EXISTS (SELECT 1 FROM edge WHERE dst = nid)",
            [],
        )?;
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
