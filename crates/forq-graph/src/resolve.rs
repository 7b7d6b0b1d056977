//! Name resolution: turns the references and imports of files into edges
//! (`calls`, `inherits`, `imports`), each with a confidence.
//!
//! In order, a call resolves through: its receiver (`self`/`this` to the
//! enclosing type and its bases; an imported module alias to that
//! module's top level; a type name to that type's methods), then an import
//! of the called name, then a definition in the same file visible from the
//! call, and only then the name alone. Through the first three the edge is
//! `exact` (or `ambiguous` when the scope itself holds twins); by name
//! alone it is `unique` when one definition has the name and `ambiguous`
//! otherwise, with an edge to every candidate. A call through an import
//! of something outside the repository gets no edge at all.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rusqlite::{Connection, OptionalExtension};

use crate::lang::Lang;
use crate::store::EdgeRow;

/// Candidates kept for one ambiguous reference.
pub(crate) const MAX_CANDIDATES: usize = 64;

/// Kinds that are types (have methods, can be inherited from).
const TYPE_KINDS: [&str; 7] = [
    "class",
    "struct",
    "impl",
    "trait",
    "interface",
    "enum",
    "type",
];
/// Receivers that mean "this object".
const SELF_RECEIVERS: [&str; 5] = ["self", "this", "Self", "cls", "super()"];

/// The start of an edge's `dst` that stands for every definition of a name
/// found by name alone: `?m:name` (methods) or `?f:name` (functions,
/// types, macros), in the language family of the edge's file.
pub(crate) const AMBIGUOUS_PREFIX: &str = "?";

/// What a reference resolved to.
struct Found {
    targets: Vec<String>,
    /// Through scope, receiver or import.
    exact: bool,
    /// How many definitions it could be.
    candidates: usize,
}

impl Found {
    fn exact(targets: Vec<String>) -> Found {
        Found {
            candidates: targets.len(),
            targets,
            exact: true,
        }
    }

    fn listed(targets: Vec<String>) -> Found {
        Found {
            candidates: targets.len(),
            targets,
            exact: false,
        }
    }
}

/// Kinds a by-name marker (`?m:` or `?f:`) stands for.
pub(crate) fn marker_kinds(marker: char) -> &'static [&'static str] {
    if marker == 'm' {
        &["method"]
    } else {
        &["function", "class", "struct", "macro"]
    }
}

/// Which references to resolve again.
#[derive(Debug, Default)]
pub(crate) struct Dirty {
    /// Everything (a cold index, or a repair).
    pub(crate) all: bool,
    /// Files whose references and imports are all resolved again.
    pub(crate) files: HashSet<String>,
    /// Names whose definitions changed: references to them anywhere (and
    /// through them as receivers) are resolved again.
    pub(crate) names: HashSet<String>,
    /// Some type's bases changed: every call through `self`/`this` again.
    pub(crate) self_calls: bool,
}

impl Dirty {
    pub(crate) fn is_empty(&self) -> bool {
        !self.all && self.files.is_empty() && self.names.is_empty() && !self.self_calls
    }
}

#[derive(Debug, Clone)]
struct Sym {
    id: String,
    name: String,
    kind: String,
    parent: Option<String>,
    file: String,
}

/// The definitions of one name, grouped so that a lookup by file or by
/// type does not walk them all (`new` has thousands in a large tree).
#[derive(Debug, Default)]
struct NameGroups {
    by_file: HashMap<String, Vec<Arc<Sym>>>,
    /// Methods by the name of the type (class, impl, trait...) holding them.
    by_type: HashMap<String, Vec<Arc<Sym>>>,
}

#[derive(Debug, Clone)]
struct RefRow {
    id: i64,
    file: String,
    /// `call` or `base`.
    kind: &'static str,
    scope: Option<String>,
    name: String,
    receiver: Option<String>,
    line: u32,
}

#[derive(Debug, Clone)]
struct ImportRow {
    id: i64,
    file: String,
    module: String,
    name: Option<String>,
    local: Option<String>,
    line: u32,
}

/// One of a file's imports, as the file's shared list holds it (a
/// binding is looked up for most references: copying the row, four
/// strings, each time was 7% of `resolve_ref`'s instructions).
struct Bound(Arc<Vec<ImportRow>>, usize);

impl std::ops::Deref for Bound {
    type Target = ImportRow;

    fn deref(&self) -> &ImportRow {
        &self.0[self.1]
    }
}

/// What an import resolves to.
enum Target {
    /// Files of the repository (the module, or `module/name`).
    Files(Vec<String>),
    /// Something outside the repository.
    External,
    /// Nothing found, but it is not known to be outside (a Rust
    /// `crate::` path that does not map to a file).
    Unknown,
}

/// What a name resolves to through an import.
enum Through {
    /// Definitions in the imported module.
    Found(Vec<String>),
    /// The module is in the repository but does not define the name.
    Missing,
    /// The module is outside the repository: no edge.
    External,
    /// The module could not be placed either way.
    Unknown,
}

/// The rows a cold load wrote, kept as they were written so that
/// resolution does not read them back: the same rows, in the same order,
/// as the tables give.
#[derive(Default)]
pub(crate) struct Written {
    syms: Vec<Sym>,
    refs: Vec<RefRow>,
    imports: Vec<ImportRow>,
}

impl Written {
    /// Keeps what resolution needs of one file's facts, written as file
    /// number `fid`.
    pub(crate) fn add(&mut self, path: &str, facts: crate::extract::FileFacts, fid: i64) {
        let crate::extract::FileFacts {
            symbols,
            refs,
            imports,
            ..
        } = facts;
        // A scope or parent that is not one of the file's symbols is
        // written as none.
        let known: HashSet<&str> = symbols.iter().map(|s| s.id.as_str()).collect();
        let within = |id: Option<String>| id.filter(|id| known.contains(id.as_str()));
        for (n, r) in refs.into_iter().enumerate() {
            self.refs.push(RefRow {
                id: crate::store::ref_id(fid, n),
                file: path.to_owned(),
                kind: r.kind.as_str(),
                scope: within(r.scope),
                name: r.name,
                receiver: r.receiver,
                line: r.line,
            });
        }
        for (n, i) in imports.into_iter().enumerate() {
            self.imports.push(ImportRow {
                id: crate::store::import_id(fid, n),
                file: path.to_owned(),
                module: i.module,
                name: i.name,
                local: i.local,
                line: i.line,
            });
        }
        let parents: Vec<Option<String>> =
            symbols.iter().map(|s| within(s.parent.clone())).collect();
        drop(known);
        for (s, parent) in symbols.into_iter().zip(parents) {
            self.syms.push(Sym {
                parent,
                id: s.id,
                name: s.name,
                kind: s.kind,
                file: path.to_owned(),
            });
        }
    }
}

/// What resolution looks names up in: every file's language, and (when
/// preloaded) every definition, import and base, so that resolvers on
/// several threads can share one load.
#[derive(Clone, Default)]
struct Tables {
    langs: HashMap<String, Lang>,
    /// Files by the last one and by the last two parts of their path
    /// (`core/__init__.py`), for suffix lookups of module paths: by one
    /// part alone, `__init__.py` names every package.
    by_tail: HashMap<String, Vec<String>>,
    by_name: HashMap<String, Arc<Vec<Arc<Sym>>>>,
    by_id: HashMap<String, Option<Arc<Sym>>>,
    imports: HashMap<String, Arc<Vec<ImportRow>>>,
    bases: HashMap<String, Vec<String>>,
}

struct Resolver<'c> {
    /// Where rows not preloaded are read; `None` for a resolver on a
    /// worker thread, whose tables are preloaded.
    conn: Option<&'c Connection>,
    /// Shared by the resolvers of a full resolution (preloaded, never
    /// written); a lone resolver's own, filled as it reads.
    t: Arc<Tables>,
    /// What each import resolved to.
    targets: HashMap<i64, Arc<Target>>,
    /// Per name: its definitions grouped by file and by enclosing type.
    groups: HashMap<String, Arc<NameGroups>>,
    /// By-name candidates per (name, receiver or not, language family).
    by_name_cache: HashMap<(String, bool, &'static str), Arc<Vec<String>>>,
    preloaded: bool,
    /// What a preloaded resolver answers for a name nothing defines and a
    /// file without imports.
    no_syms: Arc<Vec<Arc<Sym>>>,
    no_imports: Arc<Vec<ImportRow>>,
}

/// Re-resolves what `dirty` names, inside the caller's transaction
/// (`written`, the rows of a cold load, spares reading them back).
/// Returns the number of edges written. `meanwhile` runs once on the
/// calling thread (which holds the connection) while the references are
/// resolved: on a full resolution, that is on worker threads over
/// preloaded tables, one per core; otherwise, before resolving.
pub(crate) fn resolve(
    conn: &Connection,
    dirty: &Dirty,
    written: Option<Written>,
    threads: usize,
    meanwhile: impl FnOnce(&Connection) -> rusqlite::Result<()>,
) -> rusqlite::Result<usize> {
    if dirty.is_empty() {
        return meanwhile(conn).map(|()| 0);
    }
    // A cold load's definitions, kept as written: the tables are filled
    // from them (below) on a worker while this thread runs `meanwhile`
    // when there are several, before resolving otherwise.
    let mut syms = None;
    let (mut r, refs, imports) = match written.filter(|_| dirty.all) {
        Some(written) => {
            syms = Some(written.syms);
            let t = Arc::new(Tables::load(conn, false)?);
            (
                Resolver::with(Some(conn), t, true),
                written.refs,
                written.imports,
            )
        }
        None => {
            let mut r = Resolver::new(conn, dirty.all)?;
            let (refs, imports) = r.dirty_rows(dirty)?;
            (r, refs, imports)
        }
    };
    if dirty.all {
        conn.execute("DELETE FROM edge", [])?;
        conn.execute("DELETE FROM node", [])?;
    } else {
        // An origin's edges are a range of ids.
        let mut delete = conn.prepare_cached("DELETE FROM edge WHERE eid >= ?1 AND eid < ?2")?;
        for origin in refs
            .iter()
            .map(|r| r.id)
            .chain(imports.iter().map(|i| i.id))
        {
            delete.execute([
                crate::store::edge_id(origin, 0),
                crate::store::edge_id(origin + 1, 0),
            ])?;
        }
    }
    let mut writer = crate::store::EdgeWriter::new(conn, dirty.all)?;
    let mut n = 0;
    // Written batches, kept to be freed with the tables.
    let mut written = Vec::new();
    if r.preloaded && threads > 1 {
        // Runs of whole files, taken in turn by the worker threads; this
        // thread writes each run's edges as soon as those of the runs
        // before it are written, while the rest still resolve.
        let runs = file_runs(&refs, &imports, threads * RUNS_PER_THREAD);
        let next = AtomicUsize::new(0);
        let base = std::mem::take(&mut r.t);
        let (runs, next, refs, imports) = (&runs, &next, &refs, &imports);
        r.t = std::thread::scope(|s| -> rusqlite::Result<Arc<Tables>> {
            let (send, receive) = std::sync::mpsc::channel();
            // Fills the tables, then starts the resolvers over them.
            let setup = s.spawn(move || -> rusqlite::Result<Arc<Tables>> {
                let tables = match syms {
                    Some(syms) => {
                        let mut t = Arc::unwrap_or_clone(base);
                        t.preload_written(syms, refs, imports)?;
                        Arc::new(t)
                    }
                    None => base,
                };
                for _ in 0..threads {
                    let (send, tables) = (send.clone(), tables.clone());
                    s.spawn(move || {
                        let mut r = Resolver::with(None, tables, true);
                        loop {
                            let k = next.fetch_add(1, Ordering::Relaxed);
                            let Some((refs_in, imports_in)) = runs.get(k) else {
                                return;
                            };
                            let mut edges = Vec::new();
                            let resolved = refs[refs_in.clone()]
                                .iter()
                                .try_for_each(|row| r.resolve_ref(row, &mut edges))
                                .and_then(|()| {
                                    imports[imports_in.clone()]
                                        .iter()
                                        .try_for_each(|row| r.resolve_import(row, &mut edges))
                                })
                                .map(|()| edges);
                            let failed = resolved.is_err();
                            // The receiver is gone when the writer failed.
                            if send.send((k, resolved)).is_err() || failed {
                                return;
                            }
                        }
                    });
                }
                Ok(tables)
            });
            meanwhile(conn)?;
            let mut waiting = std::collections::BTreeMap::new();
            for (k, resolved) in receive {
                waiting.insert(k, resolved?);
                while let Some(edges) = waiting.remove(&written.len()) {
                    writer.write(&edges)?;
                    n += edges.len();
                    written.push(edges);
                }
            }
            setup.join().expect("the resolution's setup panicked")
        })?;
    } else {
        if let Some(syms) = syms {
            Arc::make_mut(&mut r.t).preload_written(syms, &refs, &imports)?;
        }
        meanwhile(conn)?;
        let mut edges = Vec::new();
        for row in &refs {
            r.resolve_ref(row, &mut edges)?;
        }
        for row in &imports {
            r.resolve_import(row, &mut edges)?;
        }
        writer.write(&edges)?;
        n = edges.len();
        written.push(edges);
    }
    if !dirty.all {
        crate::store::Store::forget_unused_nodes(conn)?;
    }
    let caches = (
        std::mem::take(&mut r.groups),
        std::mem::take(&mut r.by_name_cache),
        std::mem::take(&mut r.targets),
    );
    let tables = (r.t, caches, refs, imports, written, writer.into_names());
    // Freeing a full resolution's tables takes a while (millions of
    // strings): a thread of its own does it while the caller commits and
    // builds the edges' indexes.
    if n > 10_000 {
        FREEING.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name("forq-graph-free".into())
            .spawn(move || {
                drop(tables);
                FREEING.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            // No thread to be had: the tables went with the closure.
            FREEING.fetch_sub(1, Ordering::SeqCst);
        }
    } else {
        drop(tables);
    }
    Ok(n)
}

/// Runs of whole files per resolver thread on a full resolution: enough
/// that the writer is never long without a run to write, few enough that
/// each run's hand-over costs nothing beside its resolution.
const RUNS_PER_THREAD: usize = 16;

/// Splits `refs` and `imports` (each in the order of their ids) into
/// about `n` runs of whole files, in file order: `(references, imports)`
/// of each. A file's rows, and so each origin's edges, fall in one run,
/// and every edge of a run has a smaller id than those of the next.
fn file_runs(
    refs: &[RefRow],
    imports: &[ImportRow],
    n: usize,
) -> Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    use crate::store::file_of_row;
    let size = (refs.len() + imports.len()).div_ceil(n.max(1)).max(1);
    let (mut runs, mut from) = (Vec::new(), (0, 0));
    let (mut r, mut i) = (0, 0);
    loop {
        let fid = match (refs.get(r), imports.get(i)) {
            (Some(a), Some(b)) => file_of_row(a.id).min(file_of_row(b.id)),
            (Some(a), None) => file_of_row(a.id),
            (None, Some(b)) => file_of_row(b.id),
            (None, None) => break,
        };
        while refs.get(r).is_some_and(|x| file_of_row(x.id) == fid) {
            r += 1;
        }
        while imports.get(i).is_some_and(|x| file_of_row(x.id) == fid) {
            i += 1;
        }
        if (r - from.0) + (i - from.1) >= size {
            runs.push((from.0..r, from.1..i));
            from = (r, i);
        }
    }
    if from != (refs.len(), imports.len()) {
        runs.push((from.0..refs.len(), from.1..imports.len()));
    }
    runs
}

/// Resolutions whose tables are still being freed on a thread of their own.
static FREEING: AtomicUsize = AtomicUsize::new(0);

/// Waits until every resolution's tables are freed (a benchmark does,
/// so that the next thing it times does not share the cores with that).
pub(crate) fn wait_for_frees() {
    while FREEING.load(Ordering::SeqCst) > 0 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

fn sym_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Sym> {
    Ok(Sym {
        id: r.get(0)?,
        name: r.get(1)?,
        kind: r.get(2)?,
        parent: r.get(3)?,
        file: r.get(4)?,
    })
}

fn ref_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RefRow> {
    let kind: String = r.get(2)?;
    Ok(RefRow {
        id: r.get(0)?,
        file: r.get(1)?,
        kind: if kind == "base" { "base" } else { "call" },
        scope: r.get(3)?,
        name: r.get(4)?,
        receiver: r.get(5)?,
        line: r.get(6)?,
    })
}

fn import_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ImportRow> {
    Ok(ImportRow {
        id: r.get(0)?,
        file: r.get(1)?,
        module: r.get(2)?,
        name: r.get(3)?,
        local: r.get(4)?,
        line: r.get(5)?,
    })
}

const SYM_COLUMNS: &str = "SELECT id, name, kind, parent, file FROM symbols";
const REF_COLUMNS: &str = "SELECT id, file, kind, scope, name, receiver, line FROM refs";
const IMPORT_COLUMNS: &str = "SELECT id, file, module, name, local, line FROM imports";

impl Tables {
    /// Fills the tables from a cold load's rows, kept as written.
    fn preload_written(
        &mut self,
        syms: Vec<Sym>,
        refs: &[RefRow],
        imports: &[ImportRow],
    ) -> rusqlite::Result<()> {
        let bases = refs.iter().filter_map(|r| match (&r.scope, r.kind) {
            (Some(scope), "base") => Some(Ok((scope.clone(), r.name.clone()))),
            _ => None,
        });
        self.preload(
            syms.into_iter().map(Ok),
            imports.iter().cloned().map(Ok),
            bases,
        )
    }

    /// Every parsed file's language; with `preload`, every definition,
    /// import and base too.
    fn load(conn: &Connection, preload: bool) -> rusqlite::Result<Tables> {
        let mut t = Tables::default();
        {
            let mut stmt = conn.prepare("SELECT path, lang FROM files WHERE status = 'parsed'")?;
            let rows =
                stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            for row in rows {
                let (path, lang) = row?;
                if let Some(lang) = Lang::ALL.into_iter().find(|l| l.name() == lang) {
                    t.langs.insert(path, lang);
                }
            }
        }
        for path in t.langs.keys() {
            let (one, two) = (tail(path, 1), tail(path, 2));
            t.by_tail
                .entry(one.to_owned())
                .or_default()
                .push(path.clone());
            if two != one {
                t.by_tail
                    .entry(two.to_owned())
                    .or_default()
                    .push(path.clone());
            }
        }
        if preload {
            let mut syms = conn.prepare(SYM_COLUMNS)?;
            let mut imports = conn.prepare(&format!("{IMPORT_COLUMNS} ORDER BY id"))?;
            let mut bases = conn.prepare(
                "SELECT scope, name FROM refs WHERE kind = 'base' AND scope IS NOT NULL",
            )?;
            t.preload(
                syms.query_map([], sym_row)?,
                imports.query_map([], import_row)?,
                bases.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?,
            )?;
        }
        Ok(t)
    }

    /// Takes in every definition (by id and by name), every import (by
    /// file, in the order given) and every base (`(type id, base name)`).
    fn preload(
        &mut self,
        syms: impl IntoIterator<Item = rusqlite::Result<Sym>>,
        imports: impl IntoIterator<Item = rusqlite::Result<ImportRow>>,
        bases: impl IntoIterator<Item = rusqlite::Result<(String, String)>>,
    ) -> rusqlite::Result<()> {
        let mut by_name: HashMap<String, Vec<Arc<Sym>>> = HashMap::new();
        for sym in syms {
            let sym = Arc::new(sym?);
            self.by_id.insert(sym.id.clone(), Some(sym.clone()));
            by_name.entry(sym.name.clone()).or_default().push(sym);
        }
        self.by_name = by_name.into_iter().map(|(k, v)| (k, Arc::new(v))).collect();
        let mut by_file: HashMap<String, Vec<ImportRow>> = HashMap::new();
        for row in imports {
            let row = row?;
            by_file.entry(row.file.clone()).or_default().push(row);
        }
        self.imports = by_file.into_iter().map(|(k, v)| (k, Arc::new(v))).collect();
        for base in bases {
            let (scope, name) = base?;
            self.bases.entry(scope).or_default().push(name);
        }
        Ok(())
    }
}

impl<'c> Resolver<'c> {
    fn new(conn: &'c Connection, preload: bool) -> rusqlite::Result<Resolver<'c>> {
        Ok(Resolver::with(
            Some(conn),
            Arc::new(Tables::load(conn, preload)?),
            preload,
        ))
    }

    fn with(conn: Option<&'c Connection>, t: Arc<Tables>, preloaded: bool) -> Resolver<'c> {
        Resolver {
            conn,
            t,
            targets: HashMap::new(),
            groups: HashMap::new(),
            by_name_cache: HashMap::new(),
            preloaded,
            no_syms: Arc::default(),
            no_imports: Arc::default(),
        }
    }

    /// The connection for a row that was not preloaded.
    fn db(&self) -> &'c Connection {
        self.conn
            .expect("a resolver without a connection has every row preloaded")
    }

    fn dirty_rows(&mut self, dirty: &Dirty) -> rusqlite::Result<(Vec<RefRow>, Vec<ImportRow>)> {
        let conn = self.db();
        if dirty.all {
            let refs = conn
                .prepare(&format!("{REF_COLUMNS} ORDER BY id"))?
                .query_map([], ref_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let imports = conn
                .prepare(&format!("{IMPORT_COLUMNS} ORDER BY id"))?
                .query_map([], import_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            return Ok((refs, imports));
        }
        let mut refs: HashMap<i64, RefRow> = HashMap::new();
        let mut imports = Vec::new();
        let collect =
            |sql: &str, param: &str, refs: &mut HashMap<i64, RefRow>| -> rusqlite::Result<()> {
                let mut stmt = conn.prepare_cached(sql)?;
                for row in stmt.query_map([param], ref_row)? {
                    let row = row?;
                    refs.insert(row.id, row);
                }
                Ok(())
            };
        for file in &dirty.files {
            collect(&format!("{REF_COLUMNS} WHERE file = ?1"), file, &mut refs)?;
            imports.extend(self.imports_of(file)?.iter().cloned());
        }
        if !dirty.names.is_empty() || dirty.self_calls {
            crate::store::Store::ensure_lookup_indexes(conn)?;
        }
        let mut import_ids: HashSet<i64> = imports.iter().map(|i: &ImportRow| i.id).collect();
        for name in &dirty.names {
            collect(&format!("{REF_COLUMNS} WHERE name = ?1"), name, &mut refs)?;
            collect(
                &format!("{REF_COLUMNS} WHERE receiver = ?1"),
                name,
                &mut refs,
            )?;
            let mut stmt =
                conn.prepare_cached(&format!("{IMPORT_COLUMNS} WHERE name = ?1 OR local = ?1"))?;
            for row in stmt.query_map([name], import_row)? {
                let row = row?;
                if import_ids.insert(row.id) {
                    imports.push(row);
                }
            }
        }
        if dirty.self_calls {
            for receiver in SELF_RECEIVERS {
                collect(
                    &format!("{REF_COLUMNS} WHERE receiver = ?1"),
                    receiver,
                    &mut refs,
                )?;
            }
        }
        let mut refs: Vec<RefRow> = refs.into_values().collect();
        refs.sort_by_key(|r| r.id);
        Ok((refs, imports))
    }

    fn named(&mut self, name: &str) -> rusqlite::Result<Arc<Vec<Arc<Sym>>>> {
        if let Some(found) = self.t.by_name.get(name) {
            return Ok(found.clone());
        }
        if self.preloaded {
            // Not a name defined anywhere (the tables are shared: a miss
            // is not cached in them).
            return Ok(self.no_syms.clone());
        }
        let found = Arc::new(
            self.db()
                .prepare_cached(&format!("{SYM_COLUMNS} WHERE name = ?1"))?
                .query_map([name], sym_row)?
                .map(|r| r.map(Arc::new))
                .collect::<rusqlite::Result<Vec<_>>>()?,
        );
        Arc::make_mut(&mut self.t)
            .by_name
            .insert(name.to_owned(), found.clone());
        Ok(found)
    }

    fn groups(&mut self, name: &str) -> rusqlite::Result<Arc<NameGroups>> {
        if let Some(g) = self.groups.get(name) {
            return Ok(g.clone());
        }
        let mut g = NameGroups::default();
        for s in self.named(name)?.iter() {
            g.by_file.entry(s.file.clone()).or_default().push(s.clone());
            if let Some(parent) = &s.parent {
                if let Some(p) = self.sym(parent)? {
                    if TYPE_KINDS.contains(&p.kind.as_str()) {
                        g.by_type.entry(p.name.clone()).or_default().push(s.clone());
                    }
                }
            }
        }
        let g = Arc::new(g);
        self.groups.insert(name.to_owned(), g.clone());
        Ok(g)
    }

    fn family(&self, file: &str) -> &'static str {
        self.t.langs.get(file).map_or("", |l| l.family())
    }

    fn sym(&mut self, id: &str) -> rusqlite::Result<Option<Arc<Sym>>> {
        if let Some(found) = self.t.by_id.get(id) {
            return Ok(found.clone());
        }
        if self.preloaded {
            return Ok(None);
        }
        let found = self
            .db()
            .prepare_cached(&format!("{SYM_COLUMNS} WHERE id = ?1"))?
            .query_row([id], sym_row)
            .optional()?
            .map(Arc::new);
        Arc::make_mut(&mut self.t)
            .by_id
            .insert(id.to_owned(), found.clone());
        Ok(found)
    }

    fn imports_of(&mut self, file: &str) -> rusqlite::Result<Arc<Vec<ImportRow>>> {
        if let Some(found) = self.t.imports.get(file) {
            return Ok(found.clone());
        }
        if self.preloaded {
            return Ok(self.no_imports.clone());
        }
        let found = Arc::new(
            self.db()
                .prepare_cached(&format!("{IMPORT_COLUMNS} WHERE file = ?1 ORDER BY id"))?
                .query_map([file], import_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?,
        );
        Arc::make_mut(&mut self.t)
            .imports
            .insert(file.to_owned(), found.clone());
        Ok(found)
    }

    fn bases_of(&mut self, type_id: &str) -> rusqlite::Result<Vec<String>> {
        if let Some(found) = self.t.bases.get(type_id) {
            return Ok(found.clone());
        }
        if self.preloaded {
            return Ok(Vec::new());
        }
        let found = self
            .db()
            .prepare_cached("SELECT name FROM refs WHERE kind = 'base' AND scope = ?1")?
            .query_map([type_id], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Arc::make_mut(&mut self.t)
            .bases
            .insert(type_id.to_owned(), found.clone());
        Ok(found)
    }

    /// The chain of enclosing symbols of `scope`, innermost first.
    fn ancestors(&mut self, scope: Option<&str>) -> rusqlite::Result<Vec<Arc<Sym>>> {
        let mut out = Vec::new();
        let mut at = scope.map(str::to_owned);
        while let Some(id) = at {
            let Some(sym) = self.sym(&id)? else { break };
            at = sym.parent.clone();
            out.push(sym);
            if out.len() > 32 {
                break;
            }
        }
        Ok(out)
    }

    /// Whether top-level definitions of `file` are in scope in `from`
    /// without an import: the same file, or (Go, Java) the same package
    /// directory.
    fn same_scope_file(&self, from: &str, file: &str) -> bool {
        if from == file {
            return true;
        }
        let dir = |p: &str| p.rsplit_once('/').map_or("", |(d, _)| d).len();
        let same_dir = dir(from) == dir(file) && from[..dir(from)] == file[..dir(file)];
        same_dir
            && matches!(self.t.langs.get(from), Some(Lang::Go | Lang::Java))
            && self.t.langs.get(file) == self.t.langs.get(from)
    }

    /// Whether a definition in `file` can be reached by name from `from`.
    fn same_family(&self, from: &str, file: &str) -> bool {
        match (self.t.langs.get(from), self.t.langs.get(file)) {
            (Some(a), Some(b)) => a.family() == b.family(),
            _ => false,
        }
    }

    fn resolve_ref(&mut self, row: &RefRow, out: &mut Vec<EdgeRow>) -> rusqlite::Result<()> {
        let found = if row.kind == "base" {
            self.resolve_base(row)?
        } else {
            self.resolve_call(row)?
        };
        let Some(Found {
            targets,
            exact,
            candidates: k,
        }) = found
        else {
            return Ok(());
        };
        let confidence = match (exact, k) {
            (_, 0) => return Ok(()),
            (true, 1) => "exact",
            (false, 1) => "unique",
            _ => "ambiguous",
        };
        let src = row.scope.clone().unwrap_or_else(|| row.file.clone());
        for dst in targets.into_iter().take(MAX_CANDIDATES) {
            out.push(EdgeRow {
                origin: row.id,
                kind: if row.kind == "base" {
                    "inherits"
                } else {
                    "calls"
                },
                src: src.clone(),
                dst,
                confidence,
                candidates: k,
                line: row.line,
            });
        }
        Ok(())
    }

    /// Targets of a call, and whether they were found through scope,
    /// receiver or import (`true`) or by name alone. `None`: no edge.
    fn resolve_call(&mut self, row: &RefRow) -> rusqlite::Result<Option<Found>> {
        let name = row.name.as_str();
        let ancestors = self.ancestors(row.scope.as_deref())?;
        let path_call = row.receiver.as_deref().is_some_and(|r| r.ends_with("::"));
        // `import a.b` then `a.b.f()`: the dotted receiver is the module.
        if let Some(dotted) = row.receiver.as_deref().filter(|r| r.contains('.')) {
            let module_import = self
                .imports_of(&row.file)?
                .iter()
                .find(|i| i.name.is_none() && i.module == dotted)
                .cloned();
            if let Some(import) = module_import {
                return self.call_through_module(row, &import, None);
            }
        }
        let receiver = row.receiver.as_deref().map(simple_receiver);
        if let Some(recv) = receiver {
            if SELF_RECEIVERS.contains(&recv) {
                if let Some(owner) = ancestors
                    .iter()
                    .find(|s| TYPE_KINDS.contains(&s.kind.as_str()))
                {
                    let (owner_name, owner_id) = (owner.name.clone(), owner.id.clone());
                    let found = self.methods_of_type(&row.file, &owner_name, &owner_id, name)?;
                    if !found.is_empty() {
                        return Ok(Some(Found::exact(found)));
                    }
                }
            } else if let Some(import) = self.import_binding(&row.file, recv)? {
                let holder = import.name.clone();
                return self.call_through_module(row, &import, holder.as_deref());
            } else {
                let types: Vec<Arc<Sym>> = self
                    .named(recv)?
                    .iter()
                    .filter(|s| {
                        TYPE_KINDS.contains(&s.kind.as_str())
                            && self.same_family(&row.file, &s.file)
                    })
                    .cloned()
                    .collect();
                if !types.is_empty() {
                    // Every type of that name at once (they share it); the
                    // nearest definitions win.
                    let found = self.methods_of_type(&row.file, recv, "", name)?;
                    if !found.is_empty() {
                        return Ok(Some(Found::exact(found)));
                    }
                }
                if path_call {
                    // Through a type the repository does not define
                    // (`Vec::new`): outside. Through a module path
                    // (`helpers::f`, `std::cmp::max`): its functions.
                    if recv.starts_with(char::is_uppercase) {
                        return Ok(None);
                    }
                    return self.by_name_only(&row.file, name, false);
                }
            }
            return self.by_name_only(&row.file, name, true);
        }
        if let Some(decided) = self.name_through_import(row)? {
            return Ok(decided);
        }
        // Visible in the same file: top level, or in an enclosing scope.
        let groups = self.groups(name)?;
        let package_scoped = matches!(self.t.langs.get(&row.file), Some(Lang::Go | Lang::Java));
        let in_scope: Vec<&Arc<Sym>> = if package_scoped {
            groups
                .by_file
                .iter()
                .filter(|(file, _)| self.same_scope_file(&row.file, file))
                .flat_map(|(_, defs)| defs.iter())
                .collect()
        } else {
            groups
                .by_file
                .get(&row.file)
                .into_iter()
                .flatten()
                .collect()
        };
        let visible: Vec<String> = in_scope
            .into_iter()
            .filter(|s| callable(&s.kind, false))
            .filter(|s| match &s.parent {
                None => true,
                Some(p) => ancestors.iter().any(|a| &a.id == p),
            })
            .map(|s| s.id.clone())
            .collect();
        if !visible.is_empty() {
            return Ok(Some(Found::exact(visible)));
        }
        self.by_name_only(&row.file, name, false)
    }

    fn by_name_only(
        &mut self,
        from: &str,
        name: &str,
        has_receiver: bool,
    ) -> rusqlite::Result<Option<Found>> {
        let key = (name.to_owned(), has_receiver, self.family(from));
        let found = match self.by_name_cache.get(&key) {
            Some(found) => found.clone(),
            None => {
                let mut found: Vec<String> = self
                    .named(name)?
                    .iter()
                    .filter(|s| callable(&s.kind, has_receiver) && self.same_family(from, &s.file))
                    .map(|s| s.id.clone())
                    .collect();
                found.sort();
                let found = Arc::new(found);
                self.by_name_cache.insert(key, found.clone());
                found
            }
        };
        if found.len() < 2 {
            return Ok(Some(Found::listed(found.to_vec())));
        }
        // Several definitions share the name: one row stands for all of
        // them (queries expand it), so a popular name costs one row per
        // call, not one per candidate.
        let kind = if has_receiver { 'm' } else { 'f' };
        Ok(Some(Found {
            candidates: found.len(),
            targets: vec![format!("{AMBIGUOUS_PREFIX}{kind}:{name}")],
            exact: false,
        }))
    }

    /// Methods called `name` of the type `type_name` or of its bases
    /// (seen through the imports of the file that names them), three levels
    /// up, in the language family of `from`. Of several types sharing the
    /// name (every crate has an `Error`), the nearest win: the type `type_id`
    /// itself, else those whose file shares the longest directory prefix
    /// with `from`.
    fn methods_of_type(
        &mut self,
        from: &str,
        type_name: &str,
        type_id: &str,
        name: &str,
    ) -> rusqlite::Result<Vec<String>> {
        let groups = self.groups(name)?;
        let mut types = vec![type_name.to_owned()];
        let mut seen = HashSet::new();
        for level in 0..3 {
            let mut found: Vec<&Arc<Sym>> = Vec::new();
            for tname in &types {
                for m in groups.by_type.get(tname).into_iter().flatten() {
                    if self.same_family(from, &m.file) {
                        found.push(m);
                    }
                }
            }
            if !found.is_empty() {
                let own: Vec<String> = found
                    .iter()
                    .filter(|m| level == 0 && m.parent.as_deref() == Some(type_id))
                    .map(|m| m.id.clone())
                    .collect();
                if !own.is_empty() {
                    return Ok(own);
                }
                return Ok(nearest(from, found));
            }
            // The bases of the type: of its nearest definitions (a Rust
            // struct and its impls), and of `type_id` itself.
            let mut next = Vec::new();
            for tname in &types {
                if !seen.insert(tname.clone()) {
                    continue;
                }
                let all: Vec<Arc<Sym>> = self
                    .named(tname)?
                    .iter()
                    .filter(|s| {
                        TYPE_KINDS.contains(&s.kind.as_str()) && self.same_family(from, &s.file)
                    })
                    .cloned()
                    .collect();
                let near: HashSet<String> =
                    nearest(from, all.iter().collect()).into_iter().collect();
                let mut defs: Vec<Arc<Sym>> =
                    all.into_iter().filter(|s| near.contains(&s.id)).collect();
                if level == 0 {
                    defs.extend(self.sym(type_id)?);
                }
                for def in defs {
                    for base in self.bases_of(&def.id)? {
                        // `class C(S)` where `from .base import Shape as S`
                        let real = match self.import_binding(&def.file, &base)? {
                            Some(import) => import.name.clone().unwrap_or(base),
                            None => base,
                        };
                        next.push(real);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            next.sort();
            next.dedup();
            types = next;
        }
        Ok(Vec::new())
    }

    /// Definitions called `name` in `files`: at top level, or directly in
    /// a type called `holder` (a Java class imported by name).
    fn defined_in(
        &mut self,
        files: &[String],
        name: &str,
        holder: Option<&str>,
    ) -> rusqlite::Result<Vec<String>> {
        let mut out = Vec::new();
        let groups = self.groups(name)?;
        for s in files.iter().filter_map(|f| groups.by_file.get(f)).flatten() {
            let ok = match &s.parent {
                None => true,
                Some(p) => match (holder, self.sym(p)?) {
                    (Some(h), Some(parent)) => parent.name == h && parent.parent.is_none(),
                    _ => false,
                },
            };
            if ok {
                out.push(s.id.clone());
            }
        }
        out.sort();
        Ok(out)
    }

    /// The import of `file` that binds `local`, if any.
    fn import_binding(&mut self, file: &str, local: &str) -> rusqlite::Result<Option<Bound>> {
        let imports = self.imports_of(file)?;
        let found = imports
            .iter()
            .rposition(|i| i.local.as_deref() == Some(local));
        Ok(found.map(|at| Bound(imports, at)))
    }

    fn import_target(&mut self, file: &str, import: &ImportRow) -> rusqlite::Result<Arc<Target>> {
        if let Some(t) = self.targets.get(&import.id) {
            return Ok(t.clone());
        }
        let target = Arc::new(match self.t.langs.get(file) {
            Some(&lang) => module_files(
                lang,
                file,
                &import.module,
                import.name.as_deref(),
                &self.t.langs,
                &self.t.by_tail,
            ),
            None => Target::Unknown,
        });
        self.targets.insert(import.id, target.clone());
        Ok(target)
    }

    /// Definitions called `name` in the module `import` brings in (at top
    /// level, or directly in a type called `holder`).
    fn through(
        &mut self,
        file: &str,
        import: &ImportRow,
        name: &str,
        holder: Option<&str>,
    ) -> rusqlite::Result<Through> {
        Ok(match &*self.import_target(file, import)? {
            Target::Files(files) => {
                let found = self.defined_in(files, name, holder)?;
                if found.is_empty() {
                    Through::Missing
                } else {
                    Through::Found(found)
                }
            }
            Target::External => Through::External,
            Target::Unknown => Through::Unknown,
        })
    }

    /// A call through a module (`alias.f()`, `a.b.f()`): found there, no
    /// edge when the module does not have it or is outside, by name when it
    /// could not be placed.
    fn call_through_module(
        &mut self,
        row: &RefRow,
        import: &ImportRow,
        holder: Option<&str>,
    ) -> rusqlite::Result<Option<Found>> {
        match self.through(&row.file, import, &row.name, holder)? {
            Through::Found(found) => Ok(Some(Found::exact(found))),
            Through::Missing | Through::External => Ok(None),
            Through::Unknown => self.by_name_only(&row.file, &row.name, true),
        }
    }

    /// A name bound by an import of the file: found in the module, or
    /// `Some(None)` (no edge) when the module is outside; `None` to go on
    /// looking.
    fn name_through_import(&mut self, row: &RefRow) -> rusqlite::Result<Option<Option<Found>>> {
        let Some(import) = self.import_binding(&row.file, &row.name)? else {
            return Ok(None);
        };
        let wanted = import.name.clone().unwrap_or_else(|| row.name.clone());
        Ok(match self.through(&row.file, &import, &wanted, None)? {
            Through::Found(found) => Some(Some(Found::exact(found))),
            Through::External => Some(None),
            Through::Missing | Through::Unknown => None,
        })
    }

    fn resolve_base(&mut self, row: &RefRow) -> rusqlite::Result<Option<Found>> {
        let name = row.name.as_str();
        if let Some(decided) = self.name_through_import(row)? {
            return Ok(decided);
        }
        let types: Vec<Arc<Sym>> = self
            .named(name)?
            .iter()
            .filter(|s| TYPE_KINDS.contains(&s.kind.as_str()) && s.kind != "impl")
            .cloned()
            .collect();
        let same_file: Vec<String> = types
            .iter()
            .filter(|s| s.file == row.file)
            .map(|s| s.id.clone())
            .collect();
        if !same_file.is_empty() {
            return Ok(Some(Found::exact(same_file)));
        }
        Ok(Some(Found::listed(
            types.iter().map(|s| s.id.clone()).collect(),
        )))
    }

    fn resolve_import(&mut self, row: &ImportRow, out: &mut Vec<EdgeRow>) -> rusqlite::Result<()> {
        let target = self.import_target(&row.file, row)?;
        let Target::Files(files) = &*target else {
            return Ok(());
        };
        let mut dsts = Vec::new();
        if let Some(name) = &row.name {
            dsts = self.defined_in(files, name, None)?;
        }
        if dsts.is_empty() {
            dsts = files.clone();
        }
        let k = dsts.len();
        for dst in dsts.into_iter().take(MAX_CANDIDATES) {
            out.push(EdgeRow {
                origin: row.id,
                kind: "imports",
                src: row.file.clone(),
                dst,
                confidence: if k == 1 { "exact" } else { "ambiguous" },
                candidates: k,
                line: row.line,
            });
        }
        Ok(())
    }
}

/// The ids of the definitions whose files share the longest directory
/// prefix with `from` (the same file first, then the same package...).
fn nearest(from: &str, defs: Vec<&Arc<Sym>>) -> Vec<String> {
    let shared = |file: &str| -> usize {
        if file == from {
            return usize::MAX;
        }
        from.split('/')
            .zip(file.split('/'))
            .take_while(|(a, b)| a == b)
            .count()
    };
    let best = defs.iter().map(|d| shared(&d.file)).max().unwrap_or(0);
    let mut out: Vec<String> = defs
        .into_iter()
        .filter(|d| shared(&d.file) == best)
        .map(|d| d.id.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Kinds a call can land on by name: with a receiver, methods (a module's
/// functions are reached through its import); without, functions, types
/// (constructors) and macros.
fn callable(kind: &str, has_receiver: bool) -> bool {
    marker_kinds(if has_receiver { 'm' } else { 'f' }).contains(&kind)
}

/// The last simple name of a receiver expression: `self` for `self`,
/// `path` for `os.path`, `Foo` for `crate::x::Foo`.
fn simple_receiver(receiver: &str) -> &str {
    let r = receiver.trim().trim_end_matches(':');
    if r == "super()" {
        return r;
    }
    r.rsplit(['.', ':', '>']).next().unwrap_or(r).trim()
}

/// The repository files an import names.
/// The last `parts` parts of a `/`-separated path (the whole of a
/// shorter one).
fn tail(path: &str, parts: usize) -> &str {
    match path.rmatch_indices('/').nth(parts - 1) {
        Some((at, _)) => &path[at + 1..],
        None => path,
    }
}

fn module_files(
    lang: Lang,
    from: &str,
    module: &str,
    name: Option<&str>,
    langs: &HashMap<String, Lang>,
    by_tail: &HashMap<String, Vec<String>>,
) -> Target {
    let dir = from.rsplit_once('/').map_or("", |(d, _)| d);
    let exists = |p: &str| langs.contains_key(p);
    let with_suffix = |suffixes: &[String]| -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        for s in suffixes {
            for p in by_tail.get(tail(s, 2)).into_iter().flatten() {
                if p == s
                    || (p.ends_with(s.as_str()) && p.as_bytes()[p.len() - s.len() - 1] == b'/')
                {
                    found.push(p.clone());
                }
            }
        }
        found.sort();
        found.dedup();
        found
    };
    let files = |found: Vec<String>| {
        if found.is_empty() {
            Target::External
        } else {
            Target::Files(found)
        }
    };
    match lang {
        Lang::Python => {
            let dots = module.chars().take_while(|&c| c == '.').count();
            let rest: Vec<&str> = module[dots..]
                .split('.')
                .filter(|s| !s.is_empty())
                .collect();
            let candidates = |segments: &[&str]| -> Vec<String> {
                let joined = segments.join("/");
                if joined.is_empty() {
                    vec!["__init__.py".to_owned()]
                } else {
                    vec![format!("{joined}.py"), format!("{joined}/__init__.py")]
                }
            };
            let mut with_name = rest.clone();
            if let Some(n) = name {
                with_name.push(n);
            }
            if dots > 0 {
                let mut base: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
                for _ in 1..dots {
                    base.pop();
                }
                let rooted = |segs: &[&str]| -> Vec<String> {
                    candidates(segs)
                        .into_iter()
                        .map(|c| {
                            if base.is_empty() {
                                c
                            } else {
                                format!("{}/{c}", base.join("/"))
                            }
                        })
                        .filter(|p| exists(p))
                        .collect()
                };
                let found = rooted(&with_name);
                if !found.is_empty() && name.is_some() {
                    return Target::Files(found);
                }
                return files(rooted(&rest));
            }
            if name.is_some() {
                let found = with_suffix(&candidates(&with_name));
                if !found.is_empty() {
                    return Target::Files(found);
                }
            }
            files(with_suffix(&candidates(&rest)))
        }
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => {
            if !module.starts_with('.') {
                return Target::External;
            }
            let joined = normalize(&format!("{dir}/{module}"));
            let exts = [
                "",
                ".ts",
                ".tsx",
                ".js",
                ".jsx",
                ".mjs",
                ".cjs",
                "/index.ts",
                "/index.tsx",
                "/index.js",
            ];
            let stem = joined
                .strip_suffix(".js")
                .filter(|s| exists(&format!("{s}.ts")) || exists(&format!("{s}.tsx")))
                .unwrap_or(&joined);
            files(
                exts.iter()
                    .map(|e| format!("{stem}{e}"))
                    .filter(|p| exists(p))
                    .take(1)
                    .collect(),
            )
        }
        Lang::Go => {
            // The package directory: the longest trailing part of the import
            // path that is a directory of the repository.
            let mut best: Option<String> = None;
            for path in langs
                .keys()
                .filter(|p| p.ends_with(".go") && !p.ends_with("_test.go"))
            {
                let d = path.rsplit_once('/').map_or("", |(d, _)| d);
                if !d.is_empty()
                    && (module == d || module.ends_with(&format!("/{d}")))
                    && best.as_ref().is_none_or(|b| d.len() > b.len())
                {
                    best = Some(d.to_owned());
                }
            }
            let Some(best) = best else {
                return Target::External;
            };
            let mut found: Vec<String> = langs
                .keys()
                .filter(|p| {
                    p.ends_with(".go") && p.rsplit_once('/').is_some_and(|(d, _)| d == best)
                })
                .cloned()
                .collect();
            found.sort();
            Target::Files(found)
        }
        Lang::Java => {
            let base = module.replace('.', "/");
            if let Some(n) = name {
                let found = with_suffix(&[format!("{base}/{n}.java")]);
                if !found.is_empty() {
                    return Target::Files(found);
                }
            }
            files(with_suffix(&[format!("{base}.java")]))
        }
        Lang::Rust => {
            let segments: Vec<&str> = module.split("::").collect();
            let internal = matches!(segments.first(), Some(&("crate" | "self" | "super")));
            let rest: Vec<&str> = segments
                .iter()
                .copied()
                .filter(|s| !matches!(*s, "crate" | "self" | "super"))
                .collect();
            let mut found = Vec::new();
            if let Some(n) = name {
                let mut with_name = rest.clone();
                with_name.push(n);
                let j = with_name.join("/");
                found = with_suffix(&[format!("{j}.rs"), format!("{j}/mod.rs")]);
            }
            if found.is_empty() && !rest.is_empty() {
                let j = rest.join("/");
                found = with_suffix(&[format!("{j}.rs"), format!("{j}/mod.rs")]);
            }
            match (found.is_empty(), internal) {
                (false, _) => Target::Files(found),
                (true, true) => Target::Unknown,
                (true, false) => {
                    // `use mycrate::x` from a workspace member looks external;
                    // only the standard library is known to be.
                    if matches!(segments.first(), Some(&("std" | "core" | "alloc"))) {
                        Target::External
                    } else {
                        Target::Unknown
                    }
                }
            }
        }
        Lang::C | Lang::Cpp => {
            let local = normalize(&format!("{dir}/{module}"));
            if exists(&local) {
                return Target::Files(vec![local]);
            }
            files(with_suffix(&[module.trim_start_matches("./").to_owned()]))
        }
    }
}

/// `a/./b/../c` → `a/c`, without touching the file system.
fn normalize(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    out.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receivers_reduce_to_their_last_name() {
        assert_eq!(simple_receiver("self"), "self");
        assert_eq!(simple_receiver("os.path"), "path");
        assert_eq!(simple_receiver("crate::x::Foo"), "Foo");
        assert_eq!(simple_receiver("Self::"), "Self");
        assert_eq!(simple_receiver("this->inner"), "inner");
    }

    /// Runs cover every reference and import once, in order, never split
    /// a file, and each run's ids (so its edges' ids) come before the
    /// next run's.
    #[test]
    fn runs_hold_whole_files_in_order() {
        use crate::store::{file_of_row, import_id, ref_id};
        let row = |id| RefRow {
            id,
            file: String::new(),
            kind: "call",
            scope: None,
            name: String::new(),
            receiver: None,
            line: 1,
        };
        let import = |id| ImportRow {
            id,
            file: String::new(),
            module: String::new(),
            name: None,
            local: None,
            line: 1,
        };
        // File 1: 5 references, 2 imports; file 2: only imports; file 3:
        // one reference; file 4: 9 references.
        let refs: Vec<RefRow> = (0..5)
            .map(|n| ref_id(1, n))
            .chain([ref_id(3, 0)])
            .chain((0..9).map(|n| ref_id(4, n)))
            .map(row)
            .collect();
        let imports: Vec<ImportRow> = [import_id(1, 0), import_id(1, 1), import_id(2, 0)]
            .into_iter()
            .map(import)
            .collect();
        for n in [1, 2, 3, 4, 50] {
            let runs = file_runs(&refs, &imports, n);
            assert!(runs.len() <= n.max(4), "{n}: {runs:?}");
            let (mut r, mut i, mut last) = (0, 0, -1);
            for (refs_in, imports_in) in &runs {
                assert_eq!((refs_in.start, imports_in.start), (r, i), "{n}: {runs:?}");
                (r, i) = (refs_in.end, imports_in.end);
                let ids: Vec<i64> = refs[refs_in.clone()]
                    .iter()
                    .map(|x| x.id)
                    .chain(imports[imports_in.clone()].iter().map(|x| x.id))
                    .collect();
                assert!(!ids.is_empty(), "{n}: {runs:?}");
                let files: Vec<i64> = ids.iter().map(|&id| file_of_row(id)).collect();
                assert!(files.iter().all(|&f| f > last), "{n}: {runs:?}");
                last = *files.iter().max().unwrap();
            }
            assert_eq!((r, i), (refs.len(), imports.len()), "{n}: {runs:?}");
        }
        assert_eq!(file_runs(&refs, &imports, 1).len(), 1);
        assert_eq!(file_runs(&refs, &imports, 50).len(), 4);
        assert!(file_runs(&[], &[], 4).is_empty());
    }

    #[test]
    fn tails_are_the_last_parts_of_a_path() {
        assert_eq!(tail("a/b/c.py", 1), "c.py");
        assert_eq!(tail("a/b/c.py", 2), "b/c.py");
        assert_eq!(tail("c.py", 2), "c.py");
        assert_eq!(tail("b/c.py", 2), "b/c.py");
    }

    #[test]
    fn paths_normalise_lexically() {
        assert_eq!(normalize("src/./a/../b/c"), "src/b/c");
        assert_eq!(normalize("./m"), "m");
    }
}
