//! Live event streams (Server-Sent Events) over the store, one per run
//! or for the whole store, resumed exactly with `Last-Event-ID`.

#[allow(clippy::wildcard_imports)] // the server's own types and imports
use crate::*;

/// Where a stream starts: `Last-Event-ID` (a reconnect), else `?after=`.
pub(crate) fn resume_from(headers: &HeaderMap, q: &AfterQuery) -> u64 {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .or(q.after)
        .unwrap_or(0)
}

pub(crate) async fn run_stream(
    State(app): State<App>,
    Path(id): Path<String>,
    Query(q): Query<AfterQuery>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let store = app.store.clone();
    let check = id.clone();
    blocking(move || store.get(&check)).await?;
    Ok(stream(app, Some(id), resume_from(&headers, &q)))
}

pub(crate) async fn all_stream(
    State(app): State<App>,
    Query(q): Query<AfterQuery>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    stream(app, None, resume_from(&headers, &q))
}

/// What a stream still has to send.
pub(crate) struct Cursor {
    pub(crate) app: App,
    pub(crate) run: Option<String>,
    pub(crate) after: u64,
    pub(crate) pending: std::collections::VecDeque<(String, RunEvent)>,
    pub(crate) done: bool,
}

/// Events of `run` (or all runs) after store id `after`, as they are
/// written; a run's stream ends once the run has ended and every event of
/// it was sent.
pub(crate) fn stream(
    app: App,
    run: Option<String>,
    after: u64,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let cursor = Cursor {
        app,
        run,
        after,
        pending: Default::default(),
        done: false,
    };
    let events = futures_util::stream::unfold(cursor, |mut c| async move {
        loop {
            if let Some((run, e)) = c.pending.pop_front() {
                c.after = e.id;
                let data = json!({"run": run, "seq": e.seq, "at_ms": e.at_ms, "kind": e.kind, "data": e.data});
                let sse = SseEvent::default()
                    .id(e.id.to_string())
                    .event(e.kind.clone())
                    .data(data.to_string());
                return Some((Ok(sse), c));
            }
            if c.done {
                return None;
            }
            let (store, run, after) = (c.app.store.clone(), c.run.clone(), c.after);
            let read = tokio::task::spawn_blocking(move || {
                let events = store.events_after(run.as_deref(), after, 500)?;
                // Ended, for a run's stream: nothing more will come.
                let ended = match &run {
                    Some(id) if events.is_empty() => store.get(id)?.state.is_terminal(),
                    _ => false,
                };
                Ok::<_, forq_app::store::StoreError>((events, ended))
            })
            .await;
            match read {
                Ok(Ok((events, ended))) => {
                    if ended {
                        // One last look: events written with the last state.
                        c.done = true;
                    } else if events.is_empty() {
                        tokio::time::sleep(c.app.poll).await;
                    }
                    c.pending.extend(events);
                }
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "a stream cannot read the store");
                    tokio::time::sleep(c.app.poll * 10).await;
                }
                Err(_) => return None,
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
