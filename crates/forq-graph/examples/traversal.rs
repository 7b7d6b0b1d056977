//! What a pass over every node of a tree costs, against the parse that
//! made the trees: the index's Python queries together, a query of one
//! trivial pattern, and a bare `TreeCursor` walk, each over the same
//! parsed trees of every `.py` file under DIR, one thread, the median of
//! three runs. `cargo run --release -p forq-graph --example traversal --
//! DIR`. It shows where the cold index's time past the parse can and
//! cannot go: a query costs about the same whatever its patterns (the
//! cost is the walk), so fewer passes over the tree, not cheaper
//! patterns, is what makes the index faster.

use std::time::{Duration, Instant};

use streaming_iterator::StreamingIterator;

const QUERIES: [&str; 4] = [
    include_str!("../queries/python/defs.scm"),
    include_str!("../queries/python/calls.scm"),
    include_str!("../queries/python/imports.scm"),
    include_str!("../queries/python/bases.scm"),
];

fn python_files(dir: &std::path::Path, out: &mut Vec<Vec<u8>>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            python_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "py") {
            out.push(std::fs::read(&path)?);
        }
    }
    Ok(())
}

/// The median of three timed runs of `f`.
fn median(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort();
    times[1]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: traversal DIR")?;
    let mut sources = Vec::new();
    python_files(std::path::Path::new(&dir), &mut sources)?;
    let language: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&language)?;
    let mut trees = Vec::new();
    let parse = median(|| {
        trees = sources
            .iter()
            .filter_map(|s| parser.parse(s, None))
            .collect();
    });
    let run_query = |source: &str| -> Result<(Duration, usize), tree_sitter::QueryError> {
        let query = tree_sitter::Query::new(&language, source)?;
        let mut matches = 0;
        let time = median(|| {
            matches = 0;
            for (tree, text) in trees.iter().zip(&sources) {
                let mut cursor = tree_sitter::QueryCursor::new();
                let mut it = cursor.matches(&query, tree.root_node(), text.as_slice());
                while it.next().is_some() {
                    matches += 1;
                }
            }
        });
        Ok((time, matches))
    };
    let (all, all_matches) = run_query(&QUERIES.join("\n"))?;
    let (one, one_matches) = run_query("(call) @call")?;
    let mut nodes = 0usize;
    let walk = median(|| {
        nodes = 0;
        for tree in &trees {
            let mut cursor = tree.walk();
            'tree: loop {
                nodes += 1;
                if cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break 'tree;
                    }
                }
            }
        }
    });
    let ratio = |d: Duration| d.as_secs_f64() / parse.as_secs_f64();
    let report = format!(
        "{files} files, {nodes} nodes, one thread\n\
         parse                      {p:>8.3} s\n\
         index queries, together    {a:>8.3} s  {ar:.2}x the parse  ({all_matches} matches)\n\
         one pattern, (call) @call  {o:>8.3} s  {or:.2}x the parse  ({one_matches} matches)\n\
         bare TreeCursor walk       {w:>8.3} s  {wr:.2}x the parse\n",
        files = sources.len(),
        p = parse.as_secs_f64(),
        a = all.as_secs_f64(),
        ar = ratio(all),
        o = one.as_secs_f64(),
        or = ratio(one),
        w = walk.as_secs_f64(),
        wr = ratio(walk),
    );
    std::io::Write::write_all(&mut std::io::stdout(), report.as_bytes())?;
    Ok(())
}
