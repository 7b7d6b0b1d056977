//! The `forq` binary: parses arguments, runs the command, maps the outcome to
//! a documented exit code. Everything else lives in the libraries.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod cmd;
mod hints;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_logging(args.verbose);
    match cmd::run(args) {
        Ok(code) => code,
        // A reader that stopped reading (`forq runs show ID | head`) is not
        // a failure: end quietly, as `head`'s other writers do.
        Err(err) if broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            #[allow(clippy::print_stderr)] // the binary's one place to report a failure
            {
                eprintln!("forq: error: {err:#}");
                if let Some(hint) = hints::hint(&err) {
                    eprintln!("forq: hint: {hint}");
                }
            }
            ExitCode::from(cmd::EXIT_FORQ_ERROR)
        }
    }
}

fn broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
