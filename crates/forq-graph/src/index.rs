//! Building and refreshing the index of a repository: a walk, parsing on
//! worker threads (one parser each), one writer, then name resolution.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use serde::Serialize;
use sha1::Digest;

use crate::error::{Error, Result};
use crate::extract::{self, FileFacts, Queries, RefKind};
use crate::lang::Lang;
use crate::resolve::{self, Dirty};
use crate::store::{FileRow, Store, Symbol, SymbolFilter};

/// Files larger than this are recorded as skipped, not parsed.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A line longer than this, on average, marks a file as minified.
const MINIFIED_AVG_LINE: usize = 300;

/// Files written per transaction during an update.
const BATCH_FILES: usize = 256;

/// The `meta` key set while an update is under way; an index that still
/// has it was interrupted and is repaired by the next update.
const PENDING: &str = "update_pending";

/// How to index.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IndexOptions {
    /// Record statements, variables and def-use links (on by default; off
    /// saves about half the database).
    pub flow: bool,
    /// Parser threads; 0 means one per core.
    pub threads: usize,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            flow: true,
            threads: 0,
        }
    }
}

impl IndexOptions {
    /// Turns statements and def-use on or off.
    pub fn flow(mut self, on: bool) -> Self {
        self.flow = on;
        self
    }
    /// Sets the number of parser threads (0: one per core).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }
}

/// What one `update` did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct IndexReport {
    /// Source files of a supported language found.
    pub files: usize,
    /// Files parsed (new or changed).
    pub parsed: usize,
    /// Files whose content hash had not changed.
    pub unchanged: usize,
    /// Files gone since the last update.
    pub removed: usize,
    /// Files skipped as binary, minified or larger than `MAX_FILE_BYTES`.
    pub skipped: usize,
    /// Files that did not parse.
    pub failed: usize,
    /// Symbols written by this update.
    pub symbols_written: usize,
    /// Edges written by name resolution.
    pub edges_written: usize,
    /// Whether this update repaired an interrupted one.
    pub repaired: bool,
    /// Milliseconds spent walking, parsing and writing files.
    pub files_ms: u64,
    /// Milliseconds spent resolving names into edges.
    pub resolve_ms: u64,
    /// Milliseconds spent building the secondary indexes after a cold load.
    pub build_indexes_ms: u64,
}

/// The code graph of one repository, in one SQLite file.
pub struct Index {
    pub(crate) root: PathBuf,
    pub(crate) store: Store,
    options: IndexOptions,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("root", &self.root)
            .field("db", &self.store.path())
            .finish_non_exhaustive()
    }
}

/// The id git gives a blob: SHA-1 of `blob <len>\0<content>`, in hex.
fn git_blob_id(content: &[u8]) -> String {
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", content.len()).as_bytes());
    h.update(content);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Why a file is not parsed, if it is not.
fn skip_reason(content: &[u8]) -> Option<&'static str> {
    if content.iter().take(8000).any(|&b| b == 0) {
        return Some("binary");
    }
    let lines = content.iter().filter(|&&b| b == b'\n').count().max(1);
    if content.len() / lines > MINIFIED_AVG_LINE {
        return Some("minified");
    }
    None
}

/// The source files under `root` as `(language, relative path, path)`.
pub(crate) fn walk_sources(root: &Path) -> Vec<(Lang, String, PathBuf)> {
    walk(root)
        .into_iter()
        .map(|f| (f.lang, f.rel, f.path))
        .collect()
}

/// A `.h` file is C unless it reads as C++ (classes, namespaces,
/// templates, `::`): one extension serves both.
fn header_language(lang: Lang, path: &str, content: &[u8]) -> Lang {
    if lang != Lang::C || !path.ends_with(".h") {
        return lang;
    }
    let text = String::from_utf8_lossy(&content[..content.len().min(64 * 1024)]);
    let cpp = [
        "class ",
        "namespace ",
        "template <",
        "template<",
        "public:",
        "private:",
        "::",
        "#include <string>",
        "#include <vector>",
    ]
    .iter()
    .any(|marker| text.contains(marker));
    if cpp {
        Lang::Cpp
    } else {
        Lang::C
    }
}

/// A source file found by the walk.
struct Found {
    lang: Lang,
    path: PathBuf,
    rel: String,
}

/// What a worker made of one file.
enum Outcome {
    Unchanged,
    Changed(FileRow, Box<FileFacts>),
}

/// The source files under `root` (`.gitignore` honoured, hidden files and
/// `.forq/` left out), with paths relative to it.
fn walk(root: &Path) -> Vec<Found> {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .git_ignore(true)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".forq")
        .build();
    let mut out = Vec::new();
    for entry in walker.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Some(lang) = Lang::of_path(entry.path()) else {
            continue;
        };
        let rel = entry
            .path()
            .strip_prefix(root)
            .expect("the walk stays under its root")
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        out.push(Found {
            lang,
            path: entry.path().to_path_buf(),
            rel,
        });
    }
    out
}

/// Reads, hashes and (when changed) parses one file.
fn process(
    found: &Found,
    known: Option<&String>,
    queries: &HashMap<Lang, &'static Queries>,
    parser: &mut tree_sitter::Parser,
    options: &IndexOptions,
) -> Result<Outcome> {
    let io = |source| Error::Io {
        op: "read",
        path: found.path.clone(),
        source,
    };
    let size = std::fs::metadata(&found.path).map_err(io)?.len();
    let mut row = FileRow {
        path: found.rel.clone(),
        lang: found.lang.name().to_owned(),
        hash: format!("size:{size}"),
        size,
        status: "too_large",
    };
    let mut content = Vec::new();
    if size <= MAX_FILE_BYTES {
        content = std::fs::read(&found.path).map_err(io)?;
        row.hash = git_blob_id(&content);
        row.status = skip_reason(&content).unwrap_or("parsed");
    }
    if known == Some(&row.hash) {
        return Ok(Outcome::Unchanged);
    }
    let lang = header_language(found.lang, &found.rel, &content);
    row.lang = lang.name().to_owned();
    let mut facts = FileFacts::default();
    if row.status == "parsed" {
        match extract::parse(parser, lang, &content) {
            Some(tree) => {
                facts = extract::extract(
                    queries[&lang],
                    &tree,
                    &found.rel,
                    &content,
                    extract::Options { flow: options.flow },
                );
            }
            None => row.status = "parse_failed",
        }
    }
    Ok(Outcome::Changed(row, Box::new(facts)))
}

impl Index {
    /// Opens (or creates) the index at `db` for the repository at `root`,
    /// with default options.
    pub fn open(db: &Path, root: &Path) -> Result<Index> {
        Index::open_with(db, root, IndexOptions::default())
    }

    /// Opens (or creates) the index at `db` for the repository at `root`.
    pub fn open_with(db: &Path, root: &Path, options: IndexOptions) -> Result<Index> {
        let root = root.canonicalize().map_err(|source| Error::Io {
            op: "open the repository",
            path: root.to_path_buf(),
            source,
        })?;
        let store = Store::open(db)?;
        Ok(Index {
            root,
            store,
            options,
        })
    }

    /// The database file.
    pub fn db_path(&self) -> &Path {
        self.store.path()
    }

    /// Whether the last update was interrupted (the next one repairs it;
    /// queries refuse until then).
    pub fn interrupted(&self) -> Result<bool> {
        Ok(self.store.meta(PENDING)?.is_some())
    }

    /// Refuses to answer from an index whose last update did not finish.
    pub(crate) fn check_complete(&self) -> Result<()> {
        if self.interrupted()? {
            return Err(Error::Interrupted {
                path: self.store.path().to_path_buf(),
            });
        }
        Ok(())
    }

    /// Brings the index up to date with the files on disk: new and changed
    /// files are parsed (on worker threads), unchanged ones are not read
    /// past their hash, deleted ones are dropped, and names whose
    /// definitions changed are resolved again. Files are written in
    /// batches; until the final resolution commits, the index is marked
    /// pending, so an interrupted update is repaired by the next one.
    #[tracing::instrument(skip_all, fields(root = %self.root.display()))]
    pub fn update(&mut self) -> Result<IndexReport> {
        let mut report = IndexReport::default();
        let started = std::time::Instant::now();
        let found = walk(&self.root);
        report.files = found.len();
        let known = self.store.hashes()?;
        let cold = known.is_empty();
        let mut dirty = Dirty {
            all: cold,
            ..Dirty::default()
        };
        if cold {
            self.store.drop_indexes()?;
        }
        if self.store.meta(PENDING)?.is_some() {
            report.repaired = true;
            dirty.all = true;
        }
        let seen: HashSet<&str> = found.iter().map(|f| f.rel.as_str()).collect();
        let gone: Vec<String> = known
            .keys()
            .filter(|p| !seen.contains(p.as_str()))
            .cloned()
            .collect();
        let added: Vec<&str> = found
            .iter()
            .filter(|f| !known.contains_key(&f.rel))
            .map(|f| f.rel.as_str())
            .collect();
        let mut stems: Vec<String> = gone
            .iter()
            .map(String::as_str)
            .chain(added.iter().copied())
            .map(stem)
            .collect();
        stems.sort();
        stems.dedup();

        let threads = match self.options.threads {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            n => n,
        }
        .min(found.len().max(1));
        let mut queries: HashMap<Lang, &'static Queries> = HashMap::new();
        for f in &found {
            // A `.h` may turn out to be C++.
            let langs: &[Lang] = if f.lang == Lang::C {
                &[Lang::C, Lang::Cpp]
            } else {
                &[f.lang]
            };
            for &lang in langs {
                if let std::collections::hash_map::Entry::Vacant(slot) = queries.entry(lang) {
                    slot.insert(Queries::get(lang)?);
                }
            }
        }
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::sync_channel::<Result<(usize, Outcome)>>(64);
        let options = self.options.clone();
        let store = &mut self.store;
        std::thread::scope(|s| -> Result<()> {
            for _ in 0..threads {
                let tx = tx.clone();
                let (next, found, known, queries, options) =
                    (&next, &found, &known, &queries, &options);
                s.spawn(move || {
                    let mut parser = tree_sitter::Parser::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(f) = found.get(i) else { break };
                        let outcome = process(f, known.get(&f.rel), queries, &mut parser, options);
                        if tx.send(outcome.map(|o| (i, o))).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(tx);
            let mut writer = Writer::new(store, cold);
            let result = (|| {
                for outcome in rx.iter() {
                    match outcome? {
                        (_, Outcome::Unchanged) => report.unchanged += 1,
                        (_, Outcome::Changed(row, facts)) => {
                            match row.status {
                                "parsed" => report.parsed += 1,
                                "parse_failed" => report.failed += 1,
                                _ => report.skipped += 1,
                            }
                            report.symbols_written += facts.symbols.len();
                            writer.write(&row, &facts, &mut dirty)?;
                        }
                    }
                }
                for path in &gone {
                    writer.remove(path, &mut dirty)?;
                    report.removed += 1;
                }
                writer.finish()
            })();
            if result.is_err() {
                // Stop the workers: nothing more will be received.
                next.store(usize::MAX / 2, Ordering::Relaxed);
            }
            result
        })?;
        if !stems.is_empty() && !dirty.all {
            // Imports of an added or removed module resolve differently.
            let mut stmt = self
                .store
                .conn
                .prepare_cached("SELECT DISTINCT file FROM imports WHERE instr(module, ?1) > 0 OR instr(COALESCE(name, ''), ?1) > 0")
                .map_err(self.store.db())?;
            for s in &stems {
                let rows = stmt
                    .query_map([s], |r| r.get::<_, String>(0))
                    .map_err(self.store.db())?;
                for file in rows {
                    dirty.files.insert(file.map_err(self.store.db())?);
                }
            }
        }
        dirty.files.retain(|f| seen.contains(f.as_str()));
        report.files_ms = started.elapsed().as_millis() as u64;
        let started = std::time::Instant::now();
        let store = &self.store;
        let tx = store.conn.unchecked_transaction().map_err(store.db())?;
        report.edges_written = resolve::resolve(&tx, &dirty).map_err(store.db())?;
        tx.execute("DELETE FROM meta WHERE key = ?1", [PENDING])
            .map_err(store.db())?;
        tx.commit().map_err(store.db())?;
        report.resolve_ms = started.elapsed().as_millis() as u64;
        if cold {
            let started = std::time::Instant::now();
            store.create_indexes()?;
            report.build_indexes_ms = started.elapsed().as_millis() as u64;
        }
        tracing::debug!(?report, "index updated");
        Ok(report)
    }

    /// Symbols matching `filter`, by file then line.
    pub fn symbols(&self, filter: &SymbolFilter) -> Result<Vec<Symbol>> {
        self.store.symbols(filter)
    }

    /// The symbol with this id.
    pub fn symbol(&self, id: &str) -> Result<Option<Symbol>> {
        self.store.symbol(id)
    }

    /// Counts of what the index holds.
    pub fn stats(&self) -> Result<Stats> {
        let total = |rows: &[(String, usize)]| rows.iter().map(|(_, n)| n).sum();
        let c = |sql: &str| self.store.counts(sql);
        let one = |sql: &str| -> Result<usize> { Ok(total(&c(sql)?)) };
        let files_by_language = c("SELECT lang, COUNT(*) FROM files GROUP BY lang ORDER BY lang")?;
        let symbols_by_kind = c("SELECT kind, COUNT(*) FROM symbols GROUP BY kind ORDER BY kind")?;
        Ok(Stats {
            files: total(&files_by_language),
            symbols: total(&symbols_by_kind),
            tests: one("SELECT 'tests', COUNT(*) FROM symbols WHERE test")?,
            references: one("SELECT 'refs', COUNT(*) FROM refs")?,
            imports: one("SELECT 'imports', COUNT(*) FROM imports")?,
            edges: one("SELECT 'edges', COUNT(*) FROM edges")?,
            statements: one("SELECT 'statements', COUNT(*) FROM statements")?,
            def_use: one("SELECT 'defuse', COUNT(*) FROM defuse")?,
            files_by_language: files_by_language.into_iter().collect(),
            files_by_status: c("SELECT status, COUNT(*) FROM files GROUP BY status ORDER BY status")?
                .into_iter()
                .collect(),
            symbols_by_kind: symbols_by_kind.into_iter().collect(),
            edges_by_kind: c("SELECT kind || ' ' || confidence, COUNT(*) FROM edges GROUP BY kind, confidence ORDER BY 1")?
                .into_iter()
                .collect(),
        })
    }

    /// The indexed root.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// The module name a file path stands for (`pkg/util.py` → `util`).
fn stem(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    if matches!(stem, "__init__" | "mod" | "index") {
        path.rsplit('/').nth(1).unwrap_or(stem).to_owned()
    } else {
        stem.to_owned()
    }
}

/// A file's definitions (id to name) and bases (type, base) before a write.
type OldFacts = (HashMap<String, String>, Vec<(String, String)>);

/// The one writer: batches files into transactions and notes what must be
/// resolved again.
struct Writer<'s> {
    store: &'s mut Store,
    pending: usize,
    marked: bool,
    /// A cold load: the tables start empty.
    fresh: bool,
}

impl<'s> Writer<'s> {
    fn new(store: &'s mut Store, fresh: bool) -> Writer<'s> {
        Writer {
            store,
            pending: 0,
            marked: false,
            fresh,
        }
    }

    fn begin(&mut self) -> Result<()> {
        if self.pending == 0 {
            let db = self.store.db();
            self.store.conn.execute_batch("BEGIN").map_err(&db)?;
            if !self.marked {
                self.store
                    .conn
                    .execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, '1')",
                        [PENDING],
                    )
                    .map_err(db)?;
                self.marked = true;
            }
        }
        self.pending += 1;
        Ok(())
    }

    fn end(&mut self) -> Result<()> {
        if self.pending >= BATCH_FILES {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        if self.pending > 0 {
            self.store
                .conn
                .execute_batch("COMMIT")
                .map_err(self.store.db())?;
            self.pending = 0;
        }
        Ok(())
    }

    /// Notes the names a file defined before, so that a change of them is
    /// resolved again everywhere.
    fn note_old(&self, path: &str, dirty: &mut Dirty) -> Result<OldFacts> {
        let old: HashMap<String, String> = self.store.symbol_keys(path)?.into_iter().collect();
        let bases: Vec<(String, String)> = {
            let mut stmt = self
                .store
                .conn
                .prepare_cached("SELECT COALESCE(scope, ''), name FROM refs WHERE file = ?1 AND kind = 'base' ORDER BY 1, 2")
                .map_err(self.store.db())?;
            let rows = stmt
                .query_map([path], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(self.store.db())?;
            rows.collect::<rusqlite::Result<_>>()
                .map_err(self.store.db())?
        };
        dirty.files.insert(path.to_owned());
        Ok((old, bases))
    }

    fn write(&mut self, row: &FileRow, facts: &FileFacts, dirty: &mut Dirty) -> Result<()> {
        self.begin()?;
        if !dirty.all {
            let (old, old_bases) = self.note_old(&row.path, dirty)?;
            let new: HashMap<&str, &str> = facts
                .symbols
                .iter()
                .map(|s| (s.id.as_str(), s.name.as_str()))
                .collect();
            for (id, name) in &old {
                if !new.contains_key(id.as_str()) {
                    dirty.names.insert(name.clone());
                }
            }
            for (id, name) in &new {
                if !old.contains_key(*id) {
                    dirty.names.insert((*name).to_owned());
                }
            }
            let mut new_bases: Vec<(String, String)> = facts
                .refs
                .iter()
                .filter(|r| r.kind == RefKind::Base)
                .map(|r| (r.scope.clone().unwrap_or_default(), r.name.clone()))
                .collect();
            new_bases.sort();
            if new_bases != old_bases {
                dirty.self_calls = true;
            }
        }
        Store::write_file(&self.store.conn, row, facts, self.fresh).map_err(self.store.db())?;
        self.end()
    }

    fn remove(&mut self, path: &str, dirty: &mut Dirty) -> Result<()> {
        self.begin()?;
        if !dirty.all {
            let (old, old_bases) = self.note_old(path, dirty)?;
            dirty.names.extend(old.into_values());
            dirty.self_calls |= !old_bases.is_empty();
        }
        Store::delete_file(&self.store.conn, path).map_err(self.store.db())?;
        self.end()
    }

    fn finish(mut self) -> Result<()> {
        self.commit()
    }
}

impl Drop for Writer<'_> {
    fn drop(&mut self) {
        if self.pending > 0 {
            // An error left a batch open: roll it back, the index stays
            // marked pending and the next update repairs it.
            let _ = self.store.conn.execute_batch("ROLLBACK");
        }
    }
}

/// Counts of what an index holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// Files recorded (parsed or skipped).
    pub files: usize,
    /// Definitions.
    pub symbols: usize,
    /// Tests among them.
    pub tests: usize,
    /// Call and inheritance references.
    pub references: usize,
    /// Imports.
    pub imports: usize,
    /// Resolved edges (calls, inherits, imports).
    pub edges: usize,
    /// Statements.
    pub statements: usize,
    /// Def-use links.
    pub def_use: usize,
    /// Files per language.
    pub files_by_language: BTreeMap<String, usize>,
    /// Files per status (`parsed`, `binary`, `minified`, `too_large`, `parse_failed`).
    pub files_by_status: BTreeMap<String, usize>,
    /// Definitions per kind.
    pub symbols_by_kind: BTreeMap<String, usize>,
    /// Edges per kind and confidence (`calls exact`, `calls ambiguous`, ...).
    pub edges_by_kind: BTreeMap<String, usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_are_gits() {
        // `printf 'hello\n' | git hash-object --stdin` and `git hash-object /dev/null`
        assert_eq!(
            git_blob_id(b"hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(git_blob_id(b""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    }

    #[test]
    fn binary_and_minified_files_are_skipped() {
        assert_eq!(skip_reason(b"a\0b"), Some("binary"));
        assert_eq!(skip_reason(&vec![b'x'; 5000]), Some("minified"));
        assert_eq!(skip_reason(b"def f():\n    pass\n"), None);
    }

    #[test]
    fn stems_name_modules() {
        assert_eq!(stem("pkg/util.py"), "util");
        assert_eq!(stem("pkg/__init__.py"), "pkg");
        assert_eq!(stem("src/a/mod.rs"), "a");
    }
}
