//! The `forq` binary: parses arguments, runs the command, maps the outcome to
//! a documented exit code. Everything else lives in the libraries.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod cmd;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_logging(args.verbose);
    match cmd::run(args) {
        Ok(code) => code,
        Err(err) => {
            #[allow(clippy::print_stderr)] // the binary's one place to report a failure
            {
                eprintln!("forq: error: {err:#}");
            }
            ExitCode::from(cmd::EXIT_FORQ_ERROR)
        }
    }
}
