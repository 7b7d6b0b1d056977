//! `forq serve bench`: the server measured from outside, as a client sees
//! it, against a `forq serve` process over a store this benchmark writes
//! (as another forq process would):
//! - listing 1,000 runs (`GET /api/runs?limit=1000`), p50 and p95;
//! - event latency, from the store write to the client's receipt over a
//!   run's stream, with 20 runs writing at once, p50 and p95;
//! - the server's resident memory before and with 50 open streams.

use std::path::Path;
use std::time::{Duration, Instant};

use forq_app::store::{NewRun, Store};
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::json;

/// What to measure.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct BenchOptions {
    /// Runs in the store for the list (default 1,000).
    pub list_runs: usize,
    /// Times the list is fetched (default 30).
    pub list_rounds: usize,
    /// Runs writing events at once (default 20).
    pub in_flight: usize,
    /// Events each of them writes (default 25).
    pub events_each: usize,
    /// Streams held open for the memory figure (default 50).
    pub streams: usize,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            list_runs: 1000,
            list_rounds: 30,
            in_flight: 20,
            events_each: 25,
            streams: 50,
        }
    }
}

/// The figures.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct BenchReport {
    /// Runs listed.
    pub list_runs: usize,
    /// The list's time, median, ms.
    pub list_p50_ms: f64,
    /// The list's time, 95th percentile, ms.
    pub list_p95_ms: f64,
    /// Runs writing at once.
    pub in_flight: usize,
    /// Events measured.
    pub events: usize,
    /// Store write to client receipt, median, ms.
    pub latency_p50_ms: f64,
    /// The same, 95th percentile, ms.
    pub latency_p95_ms: f64,
    /// Streams held open.
    pub streams: usize,
    /// The server's resident memory before them, KiB.
    pub rss_before_kib: u64,
    /// With them open, KiB.
    pub rss_streams_kib: u64,
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    if values.is_empty() {
        return 0.0;
    }
    let i = ((values.len() - 1) as f64 * p).round() as usize;
    values[i]
}

/// Resident memory of process `pid`, KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

type BenchError = Box<dyn std::error::Error + Send + Sync>;

/// Measures the server at `url` (process `pid`) over the store at `db`.
pub async fn run(
    url: &str,
    pid: u32,
    db: &Path,
    options: BenchOptions,
) -> Result<BenchReport, BenchError> {
    let store = Store::open(db)?;
    let client = reqwest::Client::new();
    let mut list = list_times(&store, &client, url, &options).await?;
    let mut latency = event_latencies(&store, &client, url, &options).await?;
    // Memory with streams open (idle: from the newest event on).
    let newest = store
        .events_after(None, 0, usize::MAX)?
        .last()
        .map_or(0, |(_, e)| e.id);
    let rss_before_kib = rss_kib(pid);
    let mut open = Vec::new();
    for _ in 0..options.streams {
        open.push(
            client
                .get(format!("{url}/api/stream?after={newest}"))
                .send()
                .await?
                .error_for_status()?,
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_streams_kib = rss_kib(pid);
    drop(open);
    Ok(BenchReport {
        list_runs: options.list_runs,
        list_p50_ms: percentile(&mut list, 0.5),
        list_p95_ms: percentile(&mut list, 0.95),
        in_flight: options.in_flight,
        events: latency.len(),
        latency_p50_ms: percentile(&mut latency, 0.5),
        latency_p95_ms: percentile(&mut latency, 0.95),
        streams: options.streams,
        rss_before_kib,
        rss_streams_kib,
    })
}

/// The run list's latency, ms per round, over a store holding at least
/// `list_runs` runs.
async fn list_times(
    store: &Store,
    client: &reqwest::Client,
    url: &str,
    options: &BenchOptions,
) -> Result<Vec<f64>, BenchError> {
    let existing = store.list(usize::MAX)?.len();
    for n in existing..options.list_runs {
        store.create(&NewRun::fix(&n.to_string(), "a bench issue", "bench"))?;
    }
    let mut list = Vec::new();
    for _ in 0..options.list_rounds {
        let at = Instant::now();
        let runs: serde_json::Value = client
            .get(format!("{url}/api/runs?limit={}", options.list_runs))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        list.push(at.elapsed().as_secs_f64() * 1000.0);
        if runs.as_array().map_or(0, Vec::len) < options.list_runs {
            return Err(format!("the list had fewer than {} runs", options.list_runs).into());
        }
    }
    Ok(list)
}

/// From an event's write to its arrival on a run's stream, ms: one
/// stream per run in flight, events written round-robin while they
/// listen.
async fn event_latencies(
    store: &Store,
    client: &reqwest::Client,
    url: &str,
    options: &BenchOptions,
) -> Result<Vec<f64>, BenchError> {
    let start = Instant::now();
    let mut readers = Vec::new();
    let mut ids = Vec::new();
    for n in 0..options.in_flight {
        let run = store.create(&NewRun::fix(&format!("live-{n}"), "a live run", "bench"))?;
        let after = store
            .events_after(Some(&run.id), 0, usize::MAX)?
            .last()
            .map_or(0, |(_, e)| e.id);
        let resp = client
            .get(format!("{url}/api/runs/{}/stream?after={after}", run.id))
            .send()
            .await?
            .error_for_status()?;
        readers.push(tokio::spawn(read_latencies(
            resp,
            start,
            options.events_each,
        )));
        ids.push(run.id);
    }
    // Give every stream its first poll, then write, round-robin, spaced.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..options.events_each {
        for id in &ids {
            let sent = start.elapsed().as_secs_f64() * 1000.0;
            store.event(id, "bench", json!({"sent_ms": sent}))?;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut latency = Vec::new();
    for r in readers {
        latency.extend(tokio::time::timeout(Duration::from_secs(60), r).await??);
    }
    if latency.len() < options.in_flight * options.events_each {
        return Err(format!(
            "only {} of {} events arrived",
            latency.len(),
            options.in_flight * options.events_each
        )
        .into());
    }
    Ok(latency)
}

/// Reads `want` events off a stream: each one's delay since the
/// `sent_ms` it carries (ms after `start`).
async fn read_latencies(resp: reqwest::Response, start: Instant, want: usize) -> Vec<f64> {
    let mut body = resp.bytes_stream();
    let mut text = String::new();
    let mut seen = Vec::new();
    while seen.len() < want {
        let Some(Ok(chunk)) = body.next().await else {
            break;
        };
        let now = start.elapsed().as_secs_f64() * 1000.0;
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find("\n\n") {
            let block: String = text.drain(..end + 2).collect();
            let sent = block
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .and_then(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
                .and_then(|v| v["data"]["sent_ms"].as_f64());
            if let Some(sent) = sent {
                seen.push(now - sent);
            }
        }
    }
    seen
}
