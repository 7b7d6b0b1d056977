//! One cold index of a directory and nothing else, for profilers: `cargo
//! build --release -p forq-graph --example cold`, then `valgrind
//! --tool=callgrind target/release/examples/cold DIR` counts the
//! instructions of the parse, the extraction, the writes and the
//! resolution (the same on a busy machine as on an idle one). Prints the
//! wall time and the index's report; the database is a temporary file.
//! Statements and def-use are left for the first question about a file,
//! as the index does by default; `cold DIR --eager-flow` computes them
//! for every file during the index.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: cold DIR [--eager-flow]")?;
    let eager = std::env::args().nth(2).as_deref() == Some("--eager-flow");
    let db = tempfile::tempdir()?;
    let started = std::time::Instant::now();
    let mut index = forq_graph::Index::open_with(
        &db.path().join("g.db"),
        std::path::Path::new(&dir),
        forq_graph::IndexOptions::default().eager_flow(eager),
    )?;
    let report = index.update()?;
    let line = format!("{:.3} s {report:?}\n", started.elapsed().as_secs_f64());
    std::io::Write::write_all(&mut std::io::stdout(), line.as_bytes())?;
    Ok(())
}
