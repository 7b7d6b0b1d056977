#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod cache;
mod clone;
mod configure;
mod detect;
pub mod evidence;
mod gate;
mod golden;
mod hang;
mod journal;
mod report;
mod runner;
mod verdict;

pub use clone::{
    check_out_within, clone_shallow, fetch_within, is_git_url, CloneError, CloneOptions,
};
pub use configure::{
    transcript_path, ConfigStep, Configurator, ConfigureContext, ConfigureLimits, StepRecord,
};
pub use detect::{detect, Stack, StackKind};
pub use evidence::{Evidence, Outcome};
pub use forq_events::Observer;
pub use gate::{run, Fallback, GateError, GateEvent, GateOptions, Phase, Record, StackRun};
pub use golden::{golden_key, sync_golden, GoldenKey, GoldenOptions, GoldenUse};
pub use hang::{default_idle, in_progress, TestLimits, DEFAULT_TEST_IDLE_S};
pub use journal::{run_record_path, JournalError};
pub use runner::{
    provision, provision_warm, run_tests, run_tests_within, same_test, selection_command, TestRun,
    Warm,
};
pub use verdict::Verdict;
