//! `forq graph bench`: the costs of indexing and querying one tree, side by
//! side in one run, on a private copy of it (the one-file edit must not
//! touch the user's files).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::extract::{self, Queries};
use crate::index::{Index, IndexOptions};
use crate::lang::Lang;
use crate::store::SymbolFilter;

/// What `bench` measured. Times in seconds unless the name says `_ms`.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct BenchReport {
    /// Source files of supported languages.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Parser threads used (for the floor and the index alike).
    pub threads: usize,
    /// Tree-sitter parsing of every file and nothing else: the floor (the
    /// median of three, each run just before one of the cold indexes).
    pub parse_only_s: f64,
    /// A cold index into an empty database (statements and def-use left
    /// for the first question about each file, as by default): the median
    /// of three.
    pub cold_index_s: f64,
    /// `cold_index_s / parse_only_s`: the ratio of the medians.
    pub cold_over_parse: f64,
    /// A cold index without statements and def-use (`--no-flow`).
    pub cold_index_no_flow_s: f64,
    /// A cold index computing every file's statements and def-use during
    /// the update (`--eager-flow`).
    pub cold_index_eager_flow_s: f64,
    /// After the cold index, computing every file's statements and def-use
    /// at once ([`Index::compute_flow`]): what the first questions cost in
    /// all, were every file asked about.
    pub flow_on_demand_s: f64,
    /// Re-indexing the unchanged tree (the median of three in a row).
    pub noop_reindex_s: f64,
    /// Re-indexing after one file's body changed (a file of median size).
    pub one_file_reindex_s: f64,
    /// The same for the largest file.
    pub largest_file_reindex_s: f64,
    /// Re-indexing after a definition is added to the median-size file,
    /// the first such update after the cold index: it re-resolves the
    /// references the new name may answer, and builds the indexes of
    /// references by name and receiver the cold load left out.
    pub first_definition_reindex_s: f64,
    /// p95 over every query sampled below, in milliseconds (the first
    /// `statements` question of each sampled file, which computes its flow,
    /// included).
    pub query_p95_ms: f64,
    /// p50 over every query sampled.
    pub query_p50_ms: f64,
    /// p50 and p95 per query kind (`statements_first`, the first question
    /// about a file's statements, then, with every file's flow computed,
    /// `callers_d3`, `callees_d3`, `path`, `statements`, `uses`), in
    /// milliseconds.
    pub queries: Vec<QueryTiming>,
    /// Symbols indexed.
    pub symbols: usize,
    /// Edges resolved.
    pub edges: usize,
    /// Statements recorded.
    pub statements: usize,
    /// The database's size in bytes (with its WAL).
    pub db_bytes: u64,
    /// `db_bytes / bytes`: what the index costs per byte of source.
    pub db_over_source: f64,
}

/// Latencies of one kind of query.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct QueryTiming {
    /// The query.
    pub query: String,
    /// How many were timed.
    pub samples: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A small deterministic generator (no dependency for picking samples).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// Copies the source files under `root` (as the index walks them) into
/// `to`, keeping relative paths.
fn copy_sources(root: &Path, to: &Path) -> Result<(Vec<(Lang, PathBuf)>, u64)> {
    let mut files = Vec::new();
    let mut bytes = 0;
    for f in crate::index::walk_sources(root) {
        let dest = to.join(&f.1);
        let io = |op, path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { op, path, source }
        };
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir).map_err(io("create", dir))?;
        }
        bytes += std::fs::copy(&f.2, &dest).map_err(io("copy", &f.2))?;
        files.push((f.0, dest));
    }
    Ok((files, bytes))
}

/// The middle of some timings (not empty).
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// How many times the floor and the cold index are measured (in turn).
const COLD_RUNS: usize = 3;

/// Measures `root` (copied to a temporary directory first) with `threads`
/// parser threads (0: one per core) and `samples` random symbols per
/// query kind.
pub fn bench(root: &Path, threads: usize, samples: usize) -> Result<BenchReport> {
    let work = tempfile::tempdir().map_err(|source| Error::Io {
        op: "create a temporary directory",
        path: std::env::temp_dir(),
        source,
    })?;
    let tree = work.path().join("tree");
    let (files, bytes) = copy_sources(root, &tree)?;
    let threads = match threads {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    };
    for lang in Lang::ALL {
        Queries::get(lang)?; // compiled before any clock starts, as in a long-lived process
    }
    let copy = Copy {
        work: work.path(),
        tree,
        files,
        threads,
    };
    // The same cold load without statements and def-use, and with them for
    // every file, for the trade-off.
    let cold_no_flow = copy.cold_with("lean.db", IndexOptions::default().flow(false))?;
    crate::resolve::wait_for_frees();
    let cold_eager = copy.cold_with("eager.db", IndexOptions::default().eager_flow(true))?;
    let (parse_only, cold, mut index) = copy.floors_and_colds()?;
    // The median of three: the first follows the cold index closely (its
    // memory still being returned), the others are what a later run pays.
    let mut noops = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        index.update()?;
        noops.push(started.elapsed());
    }
    let noop = median(noops);
    let symbols = index.symbols(&SymbolFilter::default())?;
    let edits = copy.edits(&mut index, &symbols)?;
    let timed = time_queries(&index, &symbols, samples)?;
    let stats = index.stats()?;
    let db_bytes = ["graph.db", "graph.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(work.path().join(f)).ok())
        .map(|m| m.len())
        .sum();
    Ok(BenchReport {
        files: copy.files.len(),
        bytes,
        threads,
        parse_only_s: parse_only.as_secs_f64(),
        cold_index_s: cold.as_secs_f64(),
        cold_over_parse: cold.as_secs_f64() / parse_only.as_secs_f64().max(1e-9),
        cold_index_no_flow_s: cold_no_flow.as_secs_f64(),
        cold_index_eager_flow_s: cold_eager.as_secs_f64(),
        flow_on_demand_s: timed.flow_on_demand.as_secs_f64(),
        noop_reindex_s: noop.as_secs_f64(),
        one_file_reindex_s: edits.one_file.as_secs_f64(),
        largest_file_reindex_s: edits.largest_file.as_secs_f64(),
        first_definition_reindex_s: edits.first_definition.as_secs_f64(),
        query_p95_ms: percentile(&timed.all, 0.95),
        query_p50_ms: percentile(&timed.all, 0.5),
        queries: timed.queries,
        symbols: stats.symbols,
        edges: stats.edges,
        statements: stats.statements,
        db_bytes,
        db_over_source: db_bytes as f64 / (bytes as f64).max(1.0),
    })
}

/// The private copy measured on.
struct Copy<'a> {
    /// The temporary directory (databases beside the tree).
    work: &'a Path,
    /// The copied tree.
    tree: PathBuf,
    /// Its source files.
    files: Vec<(Lang, PathBuf)>,
    /// Parser threads.
    threads: usize,
}

/// The re-index after each edit.
struct Edits {
    one_file: Duration,
    largest_file: Duration,
    first_definition: Duration,
}

impl Copy<'_> {
    /// The floor: read and parse every file, on the same threads.
    fn parse_all(&self) -> Duration {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let started = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..self.threads {
                s.spawn(|| {
                    let mut parser = tree_sitter::Parser::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((lang, path)) = self.files.get(i) else {
                            break;
                        };
                        if let Ok(source) = std::fs::read(path) {
                            if source.len() as u64 <= crate::index::MAX_FILE_BYTES {
                                std::hint::black_box(extract::parse(&mut parser, *lang, &source));
                            }
                        }
                    }
                });
            }
        });
        started.elapsed()
    }

    /// One cold load into database `name` with `options`.
    fn cold_with(&self, name: &str, options: IndexOptions) -> Result<Duration> {
        let started = Instant::now();
        Index::open_with(
            &self.work.join(name),
            &self.tree,
            options.threads(self.threads),
        )?
        .update()?;
        Ok(started.elapsed())
    }

    /// The floor and the cold index, [`COLD_RUNS`] of each in turn, so
    /// that both see the same machine: each one's median, and the last
    /// cold index (the one measured on).
    fn floors_and_colds(&self) -> Result<(Duration, Duration, Index)> {
        let db = self.work.join("graph.db");
        let options = IndexOptions::default().threads(self.threads);
        let (mut floors, mut colds) = (Vec::new(), Vec::new());
        let mut measured = None;
        for _ in 0..COLD_RUNS {
            drop(measured.take());
            // The last index's tables may still be being freed: the floor
            // does not share the cores with that.
            crate::resolve::wait_for_frees();
            floors.push(self.parse_all());
            for suffix in ["", "-wal", "-shm"] {
                let stale = self.work.join(format!("graph.db{suffix}"));
                if stale.exists() {
                    std::fs::remove_file(&stale).map_err(|source| Error::Io {
                        op: "remove",
                        path: stale.clone(),
                        source,
                    })?;
                }
            }
            let started = Instant::now();
            let mut index = Index::open_with(&db, &self.tree, options.clone())?;
            index.update()?;
            colds.push(started.elapsed());
            measured = Some(index);
        }
        let index = measured.expect("COLD_RUNS is at least one");
        Ok((median(floors), median(colds), index))
    }

    /// One file's body changes (a comment appended): a file of median size
    /// among those that define something (the typical edit), then the
    /// largest (the worst case); then a definition added to the first.
    fn edits(&self, index: &mut Index, symbols: &[crate::store::Symbol]) -> Result<Edits> {
        let defining: std::collections::HashSet<PathBuf> =
            symbols.iter().map(|s| self.tree.join(&s.file)).collect();
        let mut sized: Vec<(u64, &PathBuf)> = self
            .files
            .iter()
            .filter(|(_, p)| defining.contains(p))
            .map(|(_, p)| (std::fs::metadata(p).map(|m| m.len()).unwrap_or(0), p))
            .collect();
        sized.sort();
        let median_file = sized.get(sized.len() / 2).map(|(_, p)| *p);
        Ok(Edits {
            one_file: append_and_update(index, median_file, comment)?,
            largest_file: append_and_update(index, sized.last().map(|(_, p)| *p), comment)?,
            first_definition: append_and_update(index, median_file, definition)?,
        })
    }
}

/// Appends `added(the file's language)` to `victim` and times the update.
fn append_and_update(
    index: &mut Index,
    victim: Option<&PathBuf>,
    added: fn(Option<Lang>) -> &'static [u8],
) -> Result<Duration> {
    let Some(victim) = victim else {
        return Ok(Duration::ZERO);
    };
    let io = |op| {
        let path = victim.clone();
        move |source| Error::Io { op, path, source }
    };
    let mut content = std::fs::read(victim).map_err(io("read"))?;
    content.extend_from_slice(added(Lang::of_path(victim)));
    std::fs::write(victim, &content).map_err(io("write"))?;
    let started = Instant::now();
    index.update()?;
    Ok(started.elapsed())
}

/// A comment, in the file's language.
fn comment(lang: Option<Lang>) -> &'static [u8] {
    match lang {
        Some(Lang::Python) => b"\n# forq bench edit\n",
        _ => b"\n// forq bench edit\n",
    }
}

/// A new definition, in the file's language.
fn definition(lang: Option<Lang>) -> &'static [u8] {
    match lang {
        Some(Lang::Python) => b"\ndef forq_bench_added():\n    pass\n",
        Some(Lang::Rust) => b"\nfn forq_bench_added() {}\n",
        Some(Lang::Go) => b"\nfunc forqBenchAdded() {}\n",
        Some(Lang::C | Lang::Cpp) => b"\nvoid forq_bench_added(void) {}\n",
        Some(Lang::JavaScript | Lang::TypeScript | Lang::Tsx) => {
            b"\nfunction forqBenchAdded() {}\n"
        }
        // Java has no definition outside a class: the edit is a comment.
        _ => b"\n// forq bench edit\n",
    }
}

/// The query latencies.
struct Timed {
    /// Per kind.
    queries: Vec<QueryTiming>,
    /// Every sample, sorted.
    all: Vec<f64>,
    /// Computing every file's flow at once, between the first
    /// `statements` questions and the rest.
    flow_on_demand: Duration,
}

/// Times `samples` queries of each kind on random callables.
fn time_queries(index: &Index, symbols: &[crate::store::Symbol], samples: usize) -> Result<Timed> {
    let mut rng = Lcg(0x5eed);
    let callables: Vec<&crate::store::Symbol> = symbols
        .iter()
        .filter(|s| matches!(s.kind.as_str(), "function" | "method"))
        .collect();
    let mut all = Vec::new();
    let mut queries = Vec::new();
    let mut time = |name: &str, f: &mut dyn FnMut(usize) -> Result<()>| -> Result<()> {
        let mut t = Vec::with_capacity(samples);
        for _ in 0..samples.min(callables.len().max(1)) {
            let i = rng.next(callables.len());
            let started = Instant::now();
            f(i)?;
            t.push(ms(started.elapsed()));
        }
        t.sort_by(f64::total_cmp);
        all.extend_from_slice(&t);
        queries.push(QueryTiming {
            query: name.to_owned(),
            samples: t.len(),
            p50_ms: percentile(&t, 0.5),
            p95_ms: percentile(&t, 0.95),
        });
        Ok(())
    };
    let mut flow_on_demand = Duration::ZERO;
    if !callables.is_empty() {
        let c = &callables;
        time("statements_first", &mut |i| {
            index.statements(&c[i].file, c[i].line + 1, 3).map(drop)
        })?;
        let started = Instant::now();
        index.compute_flow()?;
        flow_on_demand = started.elapsed();
        time("callers_d3", &mut |i| index.callers(&c[i].id, 3).map(drop))?;
        time("callees_d3", &mut |i| index.callees(&c[i].id, 3).map(drop))?;
        let n = c.len();
        time("path", &mut |i| {
            index.path(&c[i].id, &c[(i * 7 + 3) % n].id, 6).map(drop)
        })?;
        time("statements", &mut |i| {
            index.statements(&c[i].file, c[i].line + 1, 3).map(drop)
        })?;
        time("uses", &mut |i| {
            index
                .uses(&c[i].name, Some(&c[i].file), Some(c[i].line))
                .map(drop)
        })?;
    }
    all.sort_by(f64::total_cmp);
    Ok(Timed {
        queries,
        all,
        flow_on_demand,
    })
}
