//! The winner's patch: its files written into a fresh fork of the root, so
//! what test runs left behind is not in it.

use std::collections::BTreeMap;

use forq_sandbox::Sandbox;

use crate::candidate::Materialized;

/// The patch of `state` alone, its lines added plus removed, and the fork
/// it was read from (the candidate's code, no test run in it; the caller
/// destroys it).
pub(super) async fn clean_patch(
    root: &dyn Sandbox,
    state: &BTreeMap<String, Option<String>>,
) -> Result<(String, usize, Box<dyn Sandbox>), forq_sandbox::Error> {
    let fork = root.fork().await?;
    let written = Materialized {
        files: state.clone(),
    }
    .write(&*fork)
    .await;
    let diff = match written {
        Ok(()) => fork.diff().await,
        Err(e) => Err(e),
    };
    let diff = match diff {
        Ok(d) => d,
        Err(e) => {
            let _ = fork.destroy().await;
            return Err(e);
        }
    };
    let lines = diff
        .files
        .iter()
        .filter(|f| state.contains_key(&f.path))
        .map(|f| f.added_lines + f.removed_lines)
        .sum();
    Ok((only_files(&diff.patch, state), lines, fork))
}

/// The sections of a git-format patch about the files of `state` (what
/// install steps left in the root is not the candidate's).
fn only_files(patch: &str, state: &BTreeMap<String, Option<String>>) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in patch.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            let path = rest.split(" b/").next().unwrap_or("");
            keep = state.contains_key(path);
        }
        if keep {
            out.push_str(line);
        }
    }
    out
}
