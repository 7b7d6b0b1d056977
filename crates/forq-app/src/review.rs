//! Review checkpoints: a run pauses where forq.yml's `review:` says
//! (`commit`: the green patch, before it is committed; `ripple`: before
//! the agent adapts an incompatible change's callers), in `needs_review`
//! with what to look at; a person approves it (it continues from its
//! checkpoint, as a resumed run does) or rejects it (it is aborted with the
//! reason). A paused run is in the store: it survives restarts.

use serde_json::{json, Value};

use crate::config::ReviewPoint;
use crate::store::{Run, State, Store, StoreError};

/// The checkpoint a paused run keeps: the point, the state it continues
/// in, and what to look at.
pub const PAUSED: &str = "review";

/// The checkpoint that marks `point` approved for a run.
pub fn approved(point: ReviewPoint) -> String {
    format!("approved_{}", point.name())
}

/// Why a review action was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReviewError {
    /// The run is not waiting for a review.
    #[error(
        "run {id} is {state}: only a run paused for review (needs_review) is approved or rejected"
    )]
    NotPaused {
        /// The run.
        id: String,
        /// Its state.
        state: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What run `id` waits for: `{point, resume, what}`.
pub fn paused(store: &Store, id: &str) -> Result<(Run, Value), ReviewError> {
    let run = store.get(id)?;
    if run.state != State::NeedsReview {
        return Err(ReviewError::NotPaused {
            id: run.id.to_string(),
            state: run.state.name().to_owned(),
        });
    }
    let paused = store.checkpointed(&run.id, PAUSED)?.unwrap_or(Value::Null);
    Ok((run, paused))
}

/// Approves run `id` at the point it waits at: it moves back to the state
/// it paused in, ready to be driven on (`Pipeline::execute`).
pub fn approve(store: &Store, id: &str) -> Result<Run, ReviewError> {
    let (run, paused) = paused(store, id)?;
    let point = paused["point"].as_str().unwrap_or("commit");
    store.checkpoint(
        &run.id,
        &format!("approved_{point}"),
        &json!({"point": point}),
    )?;
    let resume = paused["resume"]
        .as_str()
        .and_then(State::from_name)
        .filter(|s| !s.is_terminal())
        .unwrap_or(State::Implementing);
    Ok(store.transition(&run.id, resume, &format!("approved at review ({point})"))?)
}

/// Rejects run `id`: it is aborted, with `reason`.
pub fn reject(store: &Store, id: &str, reason: &str) -> Result<Run, ReviewError> {
    let (run, paused) = paused(store, id)?;
    let point = paused["point"].as_str().unwrap_or("commit");
    let reason = if reason.trim().is_empty() {
        format!("rejected at review ({point})")
    } else {
        format!("rejected at review ({point}): {}", reason.trim())
    };
    Ok(store.transition(&run.id, State::Aborted, &reason)?)
}
