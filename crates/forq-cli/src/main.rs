//! The `forq` binary: parses arguments, runs the command, maps the outcome to
//! a documented exit code. Everything else lives in the libraries.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

/// Returns from the function with an error about what the person gave
/// on the command line (exit 65): `bail_input!("--threshold {t} is …")`.
macro_rules! bail_input {
    ($($arg:tt)*) => {
        return Err($crate::failures::Input(format!($($arg)*)).into())
    };
}

mod cli;
mod cmd;
mod exit;
mod failures;
mod parts;
mod terminal;

fn main() -> ExitCode {
    // `forq --help` ends with the exit-code table.
    let command = cli::Cli::command().after_long_help(exit::help_text());
    let args = match command
        .try_get_matches()
        .and_then(|matches| cli::Cli::from_arg_matches(&matches))
    {
        Ok(args) => args,
        Err(e) => {
            // --help and --version print and succeed; a command line that
            // does not parse is a usage error.
            let _ = e.print();
            return if e.use_stderr() {
                exit::Exit::Usage.into()
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    cli::init_logging(args.verbose);
    // `forq sandbox run` exits with its command's code: forq's own failure
    // is 125 whatever its class, as `docker run` does, so it never looks
    // like the command's.
    let passthrough = matches!(
        args.command,
        cli::Command::Sandbox(cli::SandboxCommand::Run(_))
    );
    match cmd::run(args) {
        Ok(code) => code,
        // A reader that stopped reading (`forq runs show ID | head`) is not
        // a failure: end quietly, as `head`'s other writers do.
        Err(err) if broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            #[allow(clippy::print_stderr)] // the binary's one place to report a failure
            {
                eprintln!("forq: error: {err:#}");
                if let Some(hint) = failures::hint(&err) {
                    eprintln!("forq: hint: {hint}");
                }
            }
            if passthrough {
                exit::Exit::Unclassified.into()
            } else {
                failures::exit_code(&err).into()
            }
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
