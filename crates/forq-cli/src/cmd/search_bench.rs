//! `forq search bench`.

use std::process::ExitCode;

use crate::cli::SearchBenchArgs;

pub(crate) async fn run(_args: SearchBenchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("forq search bench: not built yet")
}
