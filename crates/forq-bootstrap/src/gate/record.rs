//! What the gate concludes: a record of every stack it ran, and the
//! errors that stop the gate itself.

#[allow(clippy::wildcard_imports)] // the gate's own types and imports
use super::*;

/// What happened to one stack.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StackRun {
    /// The stack (`pytest`, `rust`, ...).
    pub name: String,
    /// The marker that detected it.
    pub marker: String,
    /// The install steps.
    pub install: Vec<String>,
    /// The test command.
    pub command: String,
    /// Where the project declares what its tests need, and what each
    /// source gave the install steps ([`Stack::declared`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub declared: Vec<String>,
    /// The exit code of the last command run (install step or test).
    pub exit_code: Option<i32>,
    /// What this stack alone concludes.
    pub verdict: Verdict,
    /// Why, in a sentence.
    pub reason: String,
    /// What the runner's output proved, when there was any.
    pub evidence: Option<Evidence>,
    /// The end of the last command's output (stdout, then stderr).
    pub output_tail: String,
    /// How long the stack took.
    pub duration_ms: u64,
    /// Versions of its toolchain, when it was green.
    #[serde(default)]
    pub toolchains: BTreeMap<String, String>,
    /// The rule that made this run a second try of the stack before it,
    /// and why (`cap_lints: lints the crate denies are errors on this
    /// compiler …`); none for a first try.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<String>,
    /// The second try its output calls for, if it failed so.
    #[serde(skip)]
    pub(crate) again: Option<super::retry::Retry>,
    /// The golden environment its tests ran in, when one was used
    /// ([`GateOptions::golden`]): the install steps were not run again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub golden: Option<crate::GoldenUse>,
}

impl StackRun {
    /// A run of `name` not started yet: `failed_deterministic`, no reason.
    pub(crate) fn new(name: &str, marker: &str) -> StackRun {
        StackRun {
            name: name.to_owned(),
            marker: marker.to_owned(),
            install: Vec::new(),
            command: String::new(),
            declared: Vec::new(),
            exit_code: None,
            verdict: Verdict::FailedDeterministic,
            reason: String::new(),
            evidence: None,
            output_tail: String::new(),
            duration_ms: 0,
            toolchains: BTreeMap::new(),
            retry: None,
            again: None,
            golden: None,
        }
    }

    /// A run of `stack` not started yet.
    pub(crate) fn of(stack: &Stack) -> StackRun {
        StackRun {
            install: stack.install.clone(),
            command: stack.command.clone(),
            declared: stack.declared.clone(),
            ..StackRun::new(stack.name(), &stack.marker)
        }
    }
}

/// The gate's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Record {
    /// The verdict.
    pub verdict: Verdict,
    /// Every stack tried, cheapest first.
    pub stacks: Vec<StackRun>,
    /// Tests that ran (passed, failed, errored) in the stack that decided.
    pub tests_executed: u32,
    /// Passed.
    pub passed: u32,
    /// Failed.
    pub failed: u32,
    /// Skipped.
    pub skipped: u32,
    /// Per-test outcomes of the stack that decided.
    pub tests: BTreeMap<String, Outcome>,
    /// The lines that prove it.
    pub evidence: Vec<String>,
    /// Why, in a sentence.
    pub reason: String,
    /// Whether this came from the recipe cache (`.forq/bootstrap/manifest.json`)
    /// instead of a run.
    pub cached: bool,
    /// How long the gate took.
    pub duration_ms: u64,
    /// The commit the verdict is about, when the repository is a git checkout.
    #[serde(default)]
    pub head: Option<String>,
    /// Versions of the toolchain the deciding stack ran with (`python3 --version`, …).
    #[serde(default)]
    pub toolchains: BTreeMap<String, String>,
}

impl Record {
    /// The record of a gate that did not run: `skipped`, nothing measured.
    pub(crate) fn skipped() -> Record {
        Record {
            verdict: Verdict::Skipped,
            stacks: Vec::new(),
            tests_executed: 0,
            passed: 0,
            failed: 0,
            skipped: 0,
            tests: BTreeMap::new(),
            evidence: Vec::new(),
            reason: "the caller asked to skip the gate".to_owned(),
            cached: false,
            duration_ms: 0,
            head: None,
            toolchains: BTreeMap::new(),
        }
    }
}

/// What can stop the gate itself (as opposed to a verdict about the
/// repository).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The sandbox failed (not the repository's commands in it).
    #[error("the sandbox failed while bootstrapping {stack}")]
    Sandbox {
        /// The stack being run.
        stack: String,
        /// forq-sandbox's error.
        #[source]
        source: forq_sandbox::Error,
    },
    /// An install step failed while provisioning a sandbox.
    #[error("install step `{command}` of {stack} failed: {reason}")]
    Install {
        /// The stack.
        stack: String,
        /// The step.
        command: String,
        /// Why, with the output's telling line.
        reason: String,
    },
    /// The repository's golden is broken: its tests stopped running after a
    /// sync. Runs refuse it rather than install again unasked.
    #[error("the golden environment {name} is broken ({reason}); build it again from scratch or remove it")]
    GoldenBroken {
        /// The golden.
        name: String,
        /// Why, as the check said it.
        reason: String,
    },
    /// A golden was not saved: its tests did not run.
    #[error("the golden environment {name} was not saved: its tests do not run ({reason})")]
    GoldenUnproven {
        /// The golden.
        name: String,
        /// Why.
        reason: String,
    },
    /// Keeping or opening a golden failed.
    #[error("the golden environment {name} could not be used")]
    Golden {
        /// The golden.
        name: String,
        /// forq-sandbox's error.
        #[source]
        source: forq_sandbox::Error,
    },
    /// The repository given by URL could not be cloned.
    #[error("cannot clone {url}")]
    Clone {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: crate::CloneError,
    },
    /// The run record could not be written.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The recipe cache could not be written.
    #[error("cannot write the bootstrap manifest {path:?}")]
    Cache {
        /// The manifest.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}
