//! `forq graph bench` without the rest of forq: builds forq-graph alone, so
//! a change to the index is measured in minutes, not a whole workspace
//! build. `cargo run --release -p forq-graph --example bench -- DIR
//! [SAMPLES]` prints the report and the process's peak resident set.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: bench DIR [SAMPLES]")?;
    let samples = args.next().map_or(Ok(100), |s| s.parse())?;
    let report = forq_graph::bench(std::path::Path::new(&dir), 0, samples)?;
    // Linux's record of the peak; elsewhere it is left out.
    let peak_mb = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map(|kb| kb / 1024);
    let out = format!(
        "{report:#?}\npeak RSS: {}\n",
        peak_mb.map_or("unknown".to_owned(), |m| format!("{m} MB"))
    );
    std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes())?;
    Ok(())
}
