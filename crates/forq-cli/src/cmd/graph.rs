//! `forq graph ...`: the code graph's commands. Each prints text for a
//! person or, with `--json`, the library's answer as JSON.

use crate::exit::Exit;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use forq_graph::{Bounded, CallEdge, Confidence, Index, IndexOptions, SymbolFilter};

use crate::cli::{
    AuditArgs, GraphBenchArgs, GraphConventionsArgs, GraphIndexArgs, GraphMapArgs, GraphPathArgs,
    GraphPatternsArgs, GraphRepo, GraphStatementsArgs, GraphStatsArgs, GraphSymbolsArgs,
    GraphUsesArgs, GraphWalkArgs,
};
use crate::terminal::print_json;

fn open(repo: &Path, db: Option<&PathBuf>, options: IndexOptions) -> anyhow::Result<Index> {
    let db = match db {
        Some(db) => db.clone(),
        None => {
            forq_sandbox::refuse_link(&repo.join(".forq"))?;
            Index::default_db(repo)
        }
    };
    Index::open_with(&db, repo, options)
        .with_context(|| format!("open the code graph of {}", repo.display()))
}

/// The index, brought up to date first: queries never answer from a stale
/// tree (an unchanged tree costs a walk and its hashes).
fn open_current(repo: &GraphRepo) -> anyhow::Result<Index> {
    let mut index = open(&repo.repo, repo.db.db.as_ref(), IndexOptions::default())?;
    index.update()?;
    Ok(index)
}

/// Prints the truncation note of a bounded answer.
fn note_truncation<T>(out: &mut impl Write, answer: &Bounded<T>) -> anyhow::Result<()> {
    if answer.truncated {
        writeln!(
            out,
            "... truncated at {} rows; {}",
            answer.items.len(),
            answer.hint.as_deref().unwrap_or("narrow the question")
        )?;
    }
    Ok(())
}

fn confidence(c: &Confidence) -> String {
    match c {
        Confidence::Exact => "exact".to_owned(),
        Confidence::Unique => "unique".to_owned(),
        Confidence::Ambiguous { candidates } => format!("ambiguous: {candidates} candidates"),
        _ => "unknown".to_owned(),
    }
}

pub(crate) fn index(args: GraphIndexArgs) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let options = IndexOptions::default()
        .flow(!args.no_flow)
        .eager_flow(args.eager_flow)
        .threads(args.threads);
    let mut index = open(&args.path, args.db.db.as_ref(), options)?;
    let report = index.update()?;
    if args.db.json {
        let mut value = serde_json::to_value(&report)?;
        value["elapsed_ms"] = serde_json::json!(started.elapsed().as_millis() as u64);
        print_json(&value)?;
    } else {
        writeln!(
            std::io::stdout().lock(),
            "{} files: {} parsed, {} unchanged, {} removed, {} skipped, {} failed; {} symbols, {} edges written in {} ms{}",
            report.files,
            report.parsed,
            report.unchanged,
            report.removed,
            report.skipped,
            report.failed,
            report.symbols_written,
            report.edges_written,
            started.elapsed().as_millis(),
            if report.repaired { " (repaired an interrupted update)" } else { "" }
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn symbols(args: GraphSymbolsArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo)?;
    let mut filter = SymbolFilter::default();
    if let Some(f) = args.file {
        filter = filter.file(f);
    }
    if let Some(n) = args.name {
        filter = filter.name(n);
    }
    if let Some(k) = args.kind {
        filter = filter.kind(k);
    }
    if args.tests {
        filter = filter.tests();
    }
    let symbols = index.symbols(&filter)?;
    if args.repo.db.json {
        return print_json(&symbols).map(|()| ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for s in &symbols {
        let test = if s.test { " [test]" } else { "" };
        writeln!(
            out,
            "{:<8} {:<40} {}:{}{test}",
            s.kind, s.qualname, s.file, s.line
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Which way a walk goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Direction {
    Callers,
    Callees,
}

fn print_edges(edges: &Bounded<CallEdge>, direction: Direction) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for e in &edges.items {
        // The symbol asked about (or the step before) on the left; the
        // arrow points the way the call goes.
        let (near, arrow, far) = match direction {
            Direction::Callers => (&e.callee, "<-", &e.caller),
            Direction::Callees => (&e.caller, "->", &e.callee),
        };
        let indent = "  ".repeat(e.depth.saturating_sub(1) as usize);
        writeln!(
            out,
            "{indent}{near} {arrow} {far}  ({}:{}, {})",
            e.file,
            e.line,
            confidence(&e.confidence)
        )?;
    }
    note_truncation(&mut out, edges)
}

pub(crate) fn walk(args: GraphWalkArgs, direction: Direction) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo)?;
    let id = index.find_symbol(&args.symbol)?.id;
    let depth = args.depth.unwrap_or(1);
    let edges = match direction {
        Direction::Callers => index.callers(&id, depth)?,
        Direction::Callees => index.callees(&id, depth)?,
    };
    if args.repo.db.json {
        return print_json(&edges).map(|()| ExitCode::SUCCESS);
    }
    print_edges(&edges, direction)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn conventions(args: GraphConventionsArgs) -> anyhow::Result<ExitCode> {
    if !(0.0..=1.0).contains(&args.threshold) {
        bail_input!(
            "--threshold {}: a share of places, from 0 to 1 (0.8: held in 80% of them)",
            args.threshold
        );
    }
    let index = open_current(&args.repo)?;
    let found = index.conventions(args.threshold)?;
    if args.repo.db.json {
        return print_json(&found).map(|()| ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if found.conventions.is_empty() {
        writeln!(
            out,
            "no convention holds in {:.0}% of its places (lower --threshold)",
            args.threshold * 100.0
        )?;
    }
    for c in &found.conventions {
        writeln!(
            out,
            "{:>4.0}%  {:>5} of {:<5}  {}",
            c.coverage() * 100.0,
            c.count,
            c.of,
            c.rule
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn patterns(args: GraphPatternsArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo)?;
    let p = index.call_patterns(&args.symbol)?;
    if args.repo.db.json {
        return print_json(&p).map(|()| ExitCode::SUCCESS);
    }
    let counts = |m: &mut dyn Iterator<Item = (String, usize)>| {
        m.map(|(k, n)| format!("{k} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}: {} call sites", p.symbol, p.sites.len())?;
    if p.sites.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "  arguments: {}",
        counts(&mut p.arity.iter().map(|(k, n)| (k.to_string(), *n)))
    )?;
    if !p.keywords.is_empty() {
        writeln!(
            out,
            "  keywords:  {}",
            counts(&mut p.keywords.iter().map(|(k, n)| (k.clone(), *n)))
        )?;
    }
    if p.none_passed > 0 {
        writeln!(out, "  None/null passed at {} call site(s)", p.none_passed)?;
    }
    writeln!(
        out,
        "  result:    {}",
        counts(&mut p.results.iter().map(|(k, n)| (k.clone(), *n)))
    )?;
    for s in &p.suspected {
        writeln!(out, "  suspected {}:{}  {}", s.file, s.line, s.why)?;
    }
    for s in &p.sites {
        let args: Vec<String> = s
            .arguments
            .iter()
            .map(|a| match &a.keyword {
                Some(k) => format!("{k}={}", a.kind),
                None => a.kind.clone(),
            })
            .collect();
        writeln!(
            out,
            "  {}:{}  ({}) → {}",
            s.file,
            s.line,
            args.join(", "),
            s.result
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo)?;
    let queries = match args.queries.is_empty() {
        true => forq_graph::AuditQuery::ALL.to_vec(),
        false => args.queries.clone(),
    };
    let found = index.audit(&queries, args.limit)?;
    if let Some(dir) = &args.issues {
        write_issues(dir, &args.repo.repo, &found)?;
    }
    if args.repo.db.json {
        return print_json(&found).map(|()| ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for f in &found {
        writeln!(out, "{:<12} {}:{}  {}", f.kind, f.file, f.line, f.message)?;
    }
    writeln!(out, "{} finding(s)", found.len())?;
    Ok(ExitCode::SUCCESS)
}

/// One Markdown issue per finding in `dir`, naming the repository by its
/// path relative to `dir` (or absolute), as `forq queue --issues` reads.
fn write_issues(dir: &Path, repo: &Path, found: &[forq_graph::AuditFinding]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let repo = repo
        .canonicalize()
        .with_context(|| format!("the repository {} does not exist", repo.display()))?;
    for (n, f) in found.iter().enumerate() {
        let id = format!("audit-{}-{}", f.kind, n + 1);
        let title = match f.kind.as_str() {
            "undocumented" => format!("Document {}", f.symbol),
            "complexity" => format!("Simplify {}", f.symbol),
            "suspected" => format!("Check the call of {} at {}:{}", f.symbol, f.file, f.line),
            _ => format!("Remove or use {}", f.symbol),
        };
        let text = format!(
            "---\nid: {id}\nlabels: [audit, {kind}]\nrepo: {repo}\n---\n# {title}\n\n{message} ({file}:{line}, found by `forq audit`).\n",
            kind = f.kind,
            repo = serde_json::to_string(&repo.display().to_string())?,
            message = f.message,
            file = f.file,
            line = f.line,
        );
        let path = dir.join(format!("{id}.md"));
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

pub(crate) fn path(args: GraphPathArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo)?;
    let (from, to) = (
        index.find_symbol(&args.from)?.id,
        index.find_symbol(&args.to)?.id,
    );
    let chain = index.path(&from, &to, args.max_depth)?;
    if args.repo.db.json {
        print_json(&chain)?;
    } else {
        let mut out = std::io::stdout().lock();
        match &chain {
            Some(chain) => {
                for e in chain {
                    writeln!(
                        out,
                        "{} -> {}  ({}:{}, {})",
                        e.caller,
                        e.callee,
                        e.file,
                        e.line,
                        confidence(&e.confidence)
                    )?;
                }
            }
            None => writeln!(
                out,
                "no chain of at most {} calls from {from} to {to}",
                args.max_depth
            )?,
        }
    }
    Ok(if chain.is_some() {
        ExitCode::SUCCESS
    } else {
        Exit::NotAchieved.into()
    })
}

pub(crate) fn affected_by(args: GraphWalkArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo)?;
    let id = index.find_symbol(&args.symbol)?.id;
    let answer = index.affected_by(&id, args.depth.unwrap_or(3))?;
    if args.repo.db.json {
        return print_json(&answer).map(|()| ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for d in &answer.items {
        writeln!(
            out,
            "{:>2} {:<9} {}  ({})",
            d.depth,
            d.via,
            d.id,
            confidence(&d.confidence)
        )?;
    }
    note_truncation(&mut out, &answer)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn tests_for(args: GraphWalkArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo)?;
    let id = index.find_symbol(&args.symbol)?.id;
    let answer = index.tests_for(&id, args.depth.unwrap_or(4))?;
    if args.repo.db.json {
        return print_json(&answer).map(|()| ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    if answer.items.is_empty() {
        writeln!(out, "no test reaches {id} through calls")?;
    }
    for c in &answer.items {
        writeln!(
            out,
            "{:>2} {}  ({}:{}, {})",
            c.depth,
            c.test,
            c.file,
            c.line,
            confidence(&c.confidence)
        )?;
    }
    note_truncation(&mut out, &answer)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn statements(args: GraphStatementsArgs) -> anyhow::Result<ExitCode> {
    let (file, line) = args
        .location
        .rsplit_once(':')
        .and_then(|(f, l)| Some((f.to_owned(), l.parse::<u32>().ok()?)))
        .ok_or_else(|| {
            crate::failures::input(format!(
                "{:?} is not FILE:LINE (for example src/app.py:42)",
                args.location
            ))
        })?;
    let index = open_current(&args.repo)?;
    let answer = index.statements(&file, line, args.radius)?;
    if args.repo.db.json {
        return print_json(&answer).map(|()| ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for s in &answer.items {
        let mark = if s.line <= line && line <= s.end_line {
            ">"
        } else {
            " "
        };
        writeln!(out, "{mark}{:>5}  {}", s.line, s.text)?;
        for v in &s.reads {
            let from: Vec<String> = v.links.iter().map(|l| l.line.to_string()).collect();
            writeln!(
                out,
                "         reads {} defined on {}",
                v.name,
                from.join(", ")
            )?;
        }
        for v in &s.writes {
            let to: Vec<String> = v.links.iter().map(|l| l.line.to_string()).collect();
            writeln!(out, "         writes {} read on {}", v.name, to.join(", "))?;
        }
    }
    note_truncation(&mut out, &answer)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn uses(args: GraphUsesArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo)?;
    let answer = index.uses(&args.name, args.file.as_deref(), args.line)?;
    if args.repo.db.json {
        return print_json(&answer).map(|()| ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    for u in &answer.items {
        writeln!(out, "{}:{}:{}  {}", u.file, u.line, u.col, u.text)?;
    }
    note_truncation(&mut out, &answer)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn map(args: GraphMapArgs) -> anyhow::Result<ExitCode> {
    let index = open_current(&args.repo)?;
    // A focus is a file path, or a SYMBOL resolved to its id.
    let mut focus = Vec::new();
    for f in &args.focus {
        if args.repo.repo.join(f).is_file() {
            focus.push(f.clone());
        } else {
            focus.push(index.find_symbol(f)?.id);
        }
    }
    let map = index.map(args.tokens, &focus)?;
    if args.repo.db.json {
        return print_json(&map).map(|()| ExitCode::SUCCESS);
    }
    write!(std::io::stdout().lock(), "{}", map.text)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn stats(args: GraphStatsArgs) -> anyhow::Result<ExitCode> {
    let repo = GraphRepo {
        repo: args.path,
        db: args.db,
    };
    let index = open_current(&repo)?;
    let stats = index.stats()?;
    if repo.db.json {
        return print_json(&stats).map(|()| ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} files, {} symbols ({} tests), {} references, {} imports, {} edges, {} statements, {} def-use links",
        stats.files, stats.symbols, stats.tests, stats.references, stats.imports, stats.edges, stats.statements, stats.def_use
    )?;
    for (lang, n) in &stats.files_by_language {
        writeln!(out, "  {lang:<16} {n} files")?;
    }
    for (kind, n) in &stats.symbols_by_kind {
        writeln!(out, "  {kind:<16} {n}")?;
    }
    for (kind, n) in &stats.edges_by_kind {
        writeln!(out, "  {kind:<20} {n}")?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn bench(args: GraphBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.path.is_dir(),
        "{} is not a directory to measure",
        args.path.display()
    );
    let report = forq_graph::bench(&args.path, args.threads, args.samples)?;
    let peak_rss_mb = peak_rss_mb();
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["peak_rss_mb"] = serde_json::json!(peak_rss_mb);
        return print_json(&value).map(|()| ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} files, {:.1} MB, {} threads",
        report.files,
        report.bytes as f64 / 1e6,
        report.threads
    )?;
    writeln!(out, "parse only (floor)   {:>8.2} s", report.parse_only_s)?;
    writeln!(
        out,
        "cold index           {:>8.2} s  ({:.2}x the floor)",
        report.cold_index_s, report.cold_over_parse
    )?;
    writeln!(
        out,
        "cold index, no flow  {:>8.2} s  ({:.2}x the floor)",
        report.cold_index_no_flow_s,
        report.cold_index_no_flow_s / report.parse_only_s.max(1e-9)
    )?;
    writeln!(
        out,
        "cold index, eager    {:>8.2} s  ({:.2}x the floor; every file's flow during the index)",
        report.cold_index_eager_flow_s,
        report.cold_index_eager_flow_s / report.parse_only_s.max(1e-9)
    )?;
    writeln!(
        out,
        "flow on demand       {:>8.2} s  (every file's, after the cold index)",
        report.flow_on_demand_s
    )?;
    writeln!(out, "no-op re-index       {:>8.3} s", report.noop_reindex_s)?;
    writeln!(
        out,
        "one-file re-index    {:>8.3} s  (median-size file; the largest: {:.3} s)",
        report.one_file_reindex_s, report.largest_file_reindex_s
    )?;
    writeln!(
        out,
        "first new definition {:>8.3} s  (re-resolves what the name may answer; builds the lookup indexes)",
        report.first_definition_reindex_s
    )?;
    for q in &report.queries {
        writeln!(
            out,
            "{:<20} p50 {:>7.2} ms  p95 {:>7.2} ms  ({} samples)",
            q.query, q.p50_ms, q.p95_ms, q.samples
        )?;
    }
    writeln!(
        out,
        "all queries          p50 {:>7.2} ms  p95 {:>7.2} ms",
        report.query_p50_ms, report.query_p95_ms
    )?;
    writeln!(
        out,
        "{} symbols, {} edges, {} statements; database {:.1} MB ({:.1}x the source); peak RSS {} MB",
        report.symbols,
        report.edges,
        report.statements,
        report.db_bytes as f64 / 1e6,
        report.db_over_source,
        peak_rss_mb.map_or("?".to_owned(), |m| m.to_string())
    )?;
    Ok(ExitCode::SUCCESS)
}

/// The process's peak resident set (VmHWM), in MB.
fn peak_rss_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}
