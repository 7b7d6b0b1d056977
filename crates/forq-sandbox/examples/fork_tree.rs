//! One warm root, a fork per candidate fix, the tests as judge: the shape of
//! forq's search, with forq-sandbox alone.
//!
//! ```text
//! cargo run -p forq-sandbox --example fork_tree -- [native|docker|host|auto] [REPO]
//! ```
//!
//! REPO defaults to `examples/calc`, whose `add` subtracts. The program
//! prints, for each candidate, whether the suite passed, then the winning
//! patch.
#![allow(clippy::print_stdout, clippy::print_stderr)] // an example talks to its user

use std::path::{Path, PathBuf};
use std::time::Duration;

use forq_sandbox::{open_backend, BackendChoice, ExecRequest, SandboxSpec};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let choice: BackendChoice = args.next().as_deref().unwrap_or("auto").parse()?;
    let repo: PathBuf = args.next().map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/calc"),
        PathBuf::from,
    );
    let backend = open_backend(choice).await?.backend;
    println!("backend: {}", backend.kind());

    let root = backend.create(&SandboxSpec::new(&repo)).await?;
    let tests =
        || ExecRequest::new(["python3", "-m", "unittest", "-q"]).timeout(Duration::from_secs(120));
    let before = root.exec(tests()).await?;
    println!(
        "before: exit {} (the suite should fail)",
        before.shell_code()
    );
    let warm = root.snapshot().await?;

    let candidates = ["return a * b", "return a + b", "return b - a"];
    let mut winner = None;
    for body in candidates {
        let child = warm.fork().await?;
        let source = String::from_utf8(child.read_file(Path::new("calc.py")).await?)?;
        let patched = source.replace("return a - b", body);
        child
            .write_file(Path::new("calc.py"), patched.as_bytes())
            .await?;
        let run = child.exec(tests()).await?;
        println!(
            "candidate {body:?}: {}",
            if run.success() { "green" } else { "red" }
        );
        if run.success() && winner.is_none() {
            winner = Some(child);
        } else {
            child.destroy().await?;
        }
    }
    match winner {
        Some(child) => {
            println!("\n{}", child.diff().await?.patch);
            child.destroy().await?;
        }
        None => eprintln!("no candidate made the suite pass"),
    }
    root.destroy().await?;
    Ok(())
}
