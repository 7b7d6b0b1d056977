//! Every exit code `forq` gives, named, in one table: each code means one
//! thing whatever the command (after cargo-nextest's named exit codes).
//! The libraries return outcomes and typed errors; only this file turns
//! them into numbers, and the README's table is generated from it.

use std::process::ExitCode;

use forq_app::failure::FailureKind;

/// What a command's exit code says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// The command did what it was asked.
    Success,
    /// The command ran and the answer is no.
    NotAchieved,
    /// Some runs of a queue failed.
    RunsFailed,
    /// The command line does not parse.
    Usage,
    /// Something given is invalid.
    Input,
    /// The repository cannot be worked on as it is.
    Repository,
    /// The model failed.
    Model,
    /// A budget ran out first.
    Budget,
    /// The machine failed.
    Infrastructure,
    /// forq failed for a reason it does not class.
    Unclassified,
    /// Interrupted.
    Cancelled,
}

impl Exit {
    /// Every code, in the order the table lists them.
    pub(crate) const ALL: [Exit; 11] = [
        Exit::Success,
        Exit::NotAchieved,
        Exit::RunsFailed,
        Exit::Usage,
        Exit::Input,
        Exit::Repository,
        Exit::Model,
        Exit::Budget,
        Exit::Infrastructure,
        Exit::Unclassified,
        Exit::Cancelled,
    ];

    /// The number a shell sees.
    pub(crate) const fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::NotAchieved => 1,
            Exit::RunsFailed => 2,
            Exit::Usage => 64,
            Exit::Input => 65,
            Exit::Repository => 66,
            Exit::Model => 67,
            Exit::Budget => 68,
            Exit::Infrastructure => 69,
            // `git bisect run` reads 125 as "cannot test this commit".
            Exit::Unclassified => 125,
            // As a shell reports SIGINT.
            Exit::Cancelled => 130,
        }
    }

    /// Its name in the docs and in scripts' words.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Exit::Success => "success",
            Exit::NotAchieved => "not achieved",
            Exit::RunsFailed => "runs failed",
            Exit::Usage => "usage",
            Exit::Input => "input",
            Exit::Repository => "repository",
            Exit::Model => "model",
            Exit::Budget => "budget",
            Exit::Infrastructure => "infrastructure",
            Exit::Unclassified => "unclassified",
            Exit::Cancelled => "cancelled",
        }
    }

    /// What it means, for the README's table.
    pub(crate) const fn meaning(self) -> &'static str {
        match self {
            Exit::Success => {
                "the command did what it was asked: a fix found, every run reached its goal, the tests stayed green, the check passed"
            }
            Exit::NotAchieved => {
                "the command ran and the answer is no: no green patch, a run needs a human, triage says leave it, a test broke, the tests do not run (`forq bootstrap`), the golden is not current, the remote's branch is not the run's"
            }
            Exit::RunsFailed => "some runs of `forq queue` or `forq runs resume` failed",
            Exit::Usage => "the command line does not parse (clap's message says why)",
            Exit::Input => {
                "a file, setting, name or flag value given is invalid: an unknown symbol or run, a missing API key, a malformed forq.yml passed with `--config`"
            }
            Exit::Repository => {
                "the repository cannot be worked on as it is: its tests do not run, every test passes and nothing names a target"
            }
            Exit::Model => {
                "the model provider refused, could not be reached, or answered unreadably after its retries; what the model wrote was unusable"
            }
            Exit::Budget => "a budget ran out first",
            Exit::Infrastructure => {
                "a sandbox backend, the Docker engine, git, the disk or the network failed (often worth a retry)"
            }
            Exit::Unclassified => {
                "forq failed for a reason it does not class (a failed `forq agent run` among them): a bug, please report it"
            }
            Exit::Cancelled => "interrupted",
        }
    }

    /// The code of a failure's class.
    pub(crate) fn of(kind: FailureKind) -> Exit {
        match kind {
            FailureKind::Input => Exit::Input,
            FailureKind::Repository => Exit::Repository,
            FailureKind::Model => Exit::Model,
            FailureKind::Budget => Exit::Budget,
            FailureKind::Infrastructure => Exit::Infrastructure,
            FailureKind::Cancelled => Exit::Cancelled,
            // The class list is forq-app's and may grow before this table
            // learns the new one: until then it is unclassified, loudly so
            // in the table test below.
            _ => Exit::Unclassified,
        }
    }

    /// The code of runs that ended so: some failed, else some short of
    /// their goal (a human's turn, aborted, paused), else success.
    pub(crate) fn of_runs(runs: &[forq_app::store::Run]) -> Exit {
        use forq_app::store::State;
        if runs.iter().any(|r| r.state == State::Failed) {
            Exit::RunsFailed
        } else if runs.iter().any(|r| {
            !matches!(
                r.state,
                State::PatchReady | State::PrOpened | State::Triaged
            )
        }) {
            Exit::NotAchieved
        } else {
            Exit::Success
        }
    }

    /// Success when the command's goal was reached, else not achieved.
    pub(crate) fn achieved(reached: bool) -> Exit {
        if reached {
            Exit::Success
        } else {
            Exit::NotAchieved
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// Every code, one per line, for `forq --help`.
pub(crate) fn help_text() -> String {
    let mut out = String::from("Exit codes (each means one thing whatever the command):\n");
    for exit in Exit::ALL {
        out.push_str(&format!(
            "  {:>3}  {:<15} {}\n",
            exit.code(),
            exit.name(),
            exit.meaning()
        ));
    }
    out
}

/// The Markdown table of every code (the README holds this text).
#[cfg(test)]
fn markdown_table() -> String {
    let mut out = String::from("| exit | name | meaning |\n|---|---|---|\n");
    for exit in Exit::ALL {
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            exit.code(),
            exit.name(),
            exit.meaning()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_code_means_one_thing() {
        let mut codes: Vec<u8> = Exit::ALL.iter().map(|e| e.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), Exit::ALL.len(), "two names share a code");
    }

    #[test]
    fn every_failure_class_has_a_code_of_its_own() {
        let kinds: Vec<FailureKind> = FailureKind::all().collect();
        assert!(kinds.len() >= 6, "{kinds:?}");
        for kind in kinds {
            assert_ne!(
                Exit::of(kind),
                Exit::Unclassified,
                "forq-app has the class {kind} and this table does not: give it a code"
            );
        }
    }

    /// The README's table is this table, so the docs cannot drift.
    #[test]
    fn the_readmes_exit_code_table_is_this_one() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
                .expect("the README");
        let start = readme
            .find("<!-- exit-codes")
            .and_then(|i| readme[i..].find('\n').map(|j| i + j + 1))
            .expect("README.md has an <!-- exit-codes --> marker");
        let end = readme
            .find("<!-- end exit-codes -->")
            .expect("README.md has an <!-- end exit-codes --> marker");
        let table = markdown_table();
        if std::env::var_os("FORQ_BLESS").is_some() {
            let fresh = format!("{}{table}{}", &readme[..start], &readme[end..]);
            std::fs::write(
                concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"),
                fresh,
            )
            .expect("README written");
            return;
        }
        assert_eq!(
            &readme[start..end],
            table,
            "README.md's exit codes are not exit.rs's: run `FORQ_BLESS=1 cargo test -p forq-cli --bin forq exit` to regenerate them"
        );
    }
}
