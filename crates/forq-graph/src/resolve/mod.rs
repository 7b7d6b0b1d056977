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

mod modules;
mod resolver;
mod tables;

use modules::*;
use resolver::*;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tables::*;

use rusqlite::{Connection, OptionalExtension};

use crate::lang::Lang;
use crate::store::EdgeRow;

/// Candidates kept for one ambiguous reference.
pub(crate) const MAX_CANDIDATES: usize = 64;

/// The start of an edge's `dst` that stands for every definition of a name
/// found by name alone: `?m:name` (methods) or `?f:name` (functions,
/// types, macros), in the language family of the edge's file.
pub(crate) const AMBIGUOUS_PREFIX: &str = "?";

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
    delete_edges(conn, dirty.all, &refs, &imports)?;
    let mut sink = Sink {
        writer: crate::store::EdgeWriter::new(conn, dirty.all)?,
        batches: Vec::new(),
    };
    if r.preloaded && threads > 1 {
        let base = std::mem::take(&mut r.t);
        r.t = resolve_on_threads(
            conn,
            base,
            syms,
            (&refs, &imports),
            threads,
            meanwhile,
            &mut sink,
        )?;
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
        sink.write(edges)?;
    }
    if !dirty.all {
        crate::store::Store::forget_unused_nodes(conn)?;
    }
    let n = sink.batches.iter().map(Vec::len).sum();
    let caches = (
        std::mem::take(&mut r.groups),
        std::mem::take(&mut r.by_name_cache),
        std::mem::take(&mut r.targets),
    );
    free_soon(
        (
            r.t,
            caches,
            refs,
            imports,
            sink.batches,
            sink.writer.into_names(),
        ),
        n,
    );
    Ok(n)
}

/// Deletes the edges about to be resolved again: all of them, or the
/// ranges of ids of the references' and imports' origins.
fn delete_edges(
    conn: &Connection,
    all: bool,
    refs: &[RefRow],
    imports: &[ImportRow],
) -> rusqlite::Result<()> {
    if all {
        conn.execute("DELETE FROM edge", [])?;
        conn.execute("DELETE FROM node", [])?;
        return Ok(());
    }
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
    Ok(())
}

/// Where resolved edges go: written in order, each batch kept to be freed
/// with the tables.
struct Sink<'c> {
    writer: crate::store::EdgeWriter<'c>,
    batches: Vec<Vec<EdgeRow>>,
}

impl Sink<'_> {
    fn write(&mut self, edges: Vec<EdgeRow>) -> rusqlite::Result<()> {
        self.writer.write(&edges)?;
        self.batches.push(edges);
        Ok(())
    }
}

/// A full resolution over preloaded tables, on `threads` workers: runs of
/// whole files taken in turn, each run's edges written by this thread as
/// soon as those of the runs before it are, while the rest still resolve.
/// The tables are filled (from a cold load's `syms`) on a worker while
/// this thread runs `meanwhile`. The tables, once the workers are done.
fn resolve_on_threads(
    conn: &Connection,
    base: Arc<Tables>,
    syms: Option<Vec<Sym>>,
    (refs, imports): (&[RefRow], &[ImportRow]),
    threads: usize,
    meanwhile: impl FnOnce(&Connection) -> rusqlite::Result<()>,
    sink: &mut Sink<'_>,
) -> rusqlite::Result<Arc<Tables>> {
    let runs = file_runs(refs, imports, threads * RUNS_PER_THREAD);
    let next = AtomicUsize::new(0);
    let (runs, next) = (&runs, &next);
    std::thread::scope(|s| -> rusqlite::Result<Arc<Tables>> {
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
            while let Some(edges) = waiting.remove(&sink.batches.len()) {
                sink.write(edges)?;
            }
        }
        setup.join().expect("the resolution's setup panicked")
    })
}

/// Drops `tables`: freeing a full resolution's (millions of strings, `n`
/// edges) takes a while, so a thread of its own does it while the caller
/// commits and builds the edges' indexes.
fn free_soon<T: Send + 'static>(tables: T, n: usize) {
    if n <= 10_000 {
        return;
    }
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
