//! One cold index of a directory and nothing else, for profilers: `cargo
//! build --release -p forq-graph --example cold`, then `valgrind
//! --tool=callgrind target/release/examples/cold DIR` counts the
//! instructions of the parse, the extraction, the writes and the
//! resolution (the same on a busy machine as on an idle one). Prints the
//! wall time and the index's report; the database is a temporary file.
//! `cold DIR --no-flow` leaves statements and def-use out.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: cold DIR [--no-flow]")?;
    let flow = std::env::args().nth(2).as_deref() != Some("--no-flow");
    let db = tempfile::tempdir()?;
    let started = std::time::Instant::now();
    let mut index = forq_graph::Index::open_with(
        &db.path().join("g.db"),
        std::path::Path::new(&dir),
        forq_graph::IndexOptions::default().flow(flow),
    )?;
    let report = index.update()?;
    let line = format!("{:.3} s {report:?}\n", started.elapsed().as_secs_f64());
    std::io::Write::write_all(&mut std::io::stdout(), line.as_bytes())?;
    Ok(())
}
