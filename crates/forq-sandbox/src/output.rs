//! Capped output capture and the loop that drives a local child process:
//! stdin feeding, live streaming, wall-clock and idle timeouts.

use std::collections::VecDeque;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;

use crate::spec::{ExecRequest, OutputChunk, StreamKind};

/// Keeps the first `cap / 2` and the last `cap - cap / 2` bytes of a stream
/// and counts what falls between.
#[derive(Debug)]
pub(crate) struct Capture {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
}

impl Capture {
    pub(crate) fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Capture {
            head_cap,
            tail_cap: cap - head_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= self.tail_cap {
            self.dropped += (self.tail.len() + bytes.len() - self.tail_cap) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.dropped += overflow as u64;
        self.tail.extend(bytes);
    }

    /// The kept bytes so far, without consuming the capture.
    #[cfg_attr(not(feature = "docker"), allow(dead_code))] // only the docker backend peeks
    pub(crate) fn peek(&self) -> Vec<u8> {
        let mut out = self.head.clone();
        out.extend(self.tail.iter());
        out
    }

    /// The kept bytes (head then tail) and the count dropped between them.
    pub(crate) fn finish(self) -> (Vec<u8>, u64) {
        let mut out = self.head;
        out.extend(self.tail);
        (out, self.dropped)
    }
}

/// Which cap ended a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expired {
    /// The wall-clock timeout.
    Timeout,
    /// The idle timeout.
    Idle,
}

/// The wall-clock and idle deadlines of one command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadlines {
    deadline: Option<Instant>,
    idle: Option<Duration>,
}

impl Deadlines {
    pub(crate) fn new(req: &ExecRequest, started: Instant) -> Self {
        Deadlines {
            deadline: req.timeout.map(|t| started + t),
            idle: req.idle_timeout,
        }
    }

    /// Sleeps until the earlier deadline, the idle one counted from
    /// `last_output`, and says which has passed; `None` when neither has
    /// (the caller looks again with a newer `last_output`). Never returns
    /// when there is no deadline.
    pub(crate) async fn wait(&self, last_output: Instant) -> Option<Expired> {
        let idle_deadline = self.idle.map(|idle| last_output + idle);
        let wake = match (self.deadline, idle_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match wake {
            Some(at) => tokio::time::sleep_until(at.into()).await,
            None => std::future::pending().await,
        }
        let now = Instant::now();
        if self.deadline.is_some_and(|d| now >= d) {
            Some(Expired::Timeout)
        } else if idle_deadline.is_some_and(|d| now >= d) {
            Some(Expired::Idle)
        } else {
            None
        }
    }
}

/// What driving a child produced; the caller maps it onto an `ExecOutcome`.
#[derive(Debug)]
pub(crate) struct Driven {
    pub(crate) status: Option<ExitStatus>,
    pub(crate) timed_out: bool,
    pub(crate) idle_timed_out: bool,
    pub(crate) duration: Duration,
    pub(crate) stdout: (Vec<u8>, u64),
    pub(crate) stderr: (Vec<u8>, u64),
}

/// How long readers may take to reach end-of-file once the command ended and
/// its process tree was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// Drives `child` to its end under the request's timeouts. `kill` must end the
/// whole process tree; it is called on a timeout and once more after the main
/// process exits, so nothing the command left behind survives it.
pub(crate) async fn drive(
    mut child: Child,
    req: &ExecRequest,
    kill: &mut (dyn FnMut() + Send),
) -> Driven {
    let started = Instant::now();
    let last_output = Arc::new(AtomicU64::new(0));
    let out = child.stdout.take().map(|s| {
        tokio::spawn(pump(
            s,
            StreamKind::Stdout,
            req.clone_stream(),
            req.output_cap,
            started,
            last_output.clone(),
        ))
    });
    let err = child.stderr.take().map(|s| {
        tokio::spawn(pump(
            s,
            StreamKind::Stderr,
            req.clone_stream(),
            req.output_cap,
            started,
            last_output.clone(),
        ))
    });
    if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), req.stdin.clone()) {
        tokio::spawn(async move {
            // A command that exits without reading its input is not an error.
            let _ = stdin.write_all(&bytes).await;
            let _ = stdin.shutdown().await;
        });
    }

    let mut timed_out = false;
    let mut idle_timed_out = false;
    let deadlines = Deadlines::new(req, started);
    let status = loop {
        let last = started + Duration::from_millis(last_output.load(Ordering::Relaxed));
        tokio::select! {
            status = child.wait() => break status.ok(),
            expired = deadlines.wait(last) => {
                match expired {
                    Some(Expired::Timeout) => timed_out = true,
                    Some(Expired::Idle) => idle_timed_out = true,
                    None => continue,
                }
                tracing::debug!(timed_out, idle_timed_out, "killing the process tree");
                kill();
                break child.wait().await.ok();
            }
        }
    };
    let duration = started.elapsed();
    // Whatever the command left running dies with it.
    kill();
    let stdout = join_pump(out).await;
    let stderr = join_pump(err).await;
    Driven {
        status,
        timed_out,
        idle_timed_out,
        duration,
        stdout,
        stderr,
    }
}

async fn join_pump(handle: Option<tokio::task::JoinHandle<(Vec<u8>, u64)>>) -> (Vec<u8>, u64) {
    let Some(mut handle) = handle else {
        return (Vec::new(), 0);
    };
    match tokio::time::timeout(DRAIN_GRACE, &mut handle).await {
        Ok(Ok(captured)) => captured,
        _ => {
            tracing::warn!("output reader did not finish after the command ended");
            handle.abort();
            (Vec::new(), 0)
        }
    }
}

pub(crate) async fn pump<R: AsyncRead + Unpin>(
    mut reader: R,
    kind: StreamKind,
    stream: Option<tokio::sync::mpsc::UnboundedSender<OutputChunk>>,
    cap: usize,
    started: Instant,
    last_output: Arc<AtomicU64>,
) -> (Vec<u8>, u64) {
    let mut capture = Capture::new(cap);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                last_output.store(started.elapsed().as_millis() as u64, Ordering::Relaxed);
                capture.push(&buf[..n]);
                if let Some(tx) = &stream {
                    let _ = tx.send(OutputChunk {
                        stream: kind,
                        bytes: buf[..n].to_vec(),
                    });
                }
            }
        }
    }
    capture.finish()
}

impl ExecRequest {
    fn clone_stream(&self) -> Option<tokio::sync::mpsc::UnboundedSender<OutputChunk>> {
        self.stream.clone()
    }
}

/// Standard streams of a local child: piped (stdin only when there are
/// bytes to feed), or all three the request's terminal.
pub(crate) fn set_stdio(
    cmd: &mut tokio::process::Command,
    req: &ExecRequest,
) -> crate::error::Result<()> {
    match &req.terminal {
        Some(slave) => {
            let io = |what| {
                slave
                    .try_clone()
                    .map(std::process::Stdio::from)
                    .map_err(|e| crate::error::Error::io("give the command its terminal", what, e))
            };
            cmd.stdin(io("stdin")?)
                .stdout(io("stdout")?)
                .stderr(io("stderr")?);
            if std::env::var_os("TERM").is_some() {
                cmd.env("TERM", std::env::var_os("TERM").unwrap_or_default());
            }
        }
        None => {
            cmd.stdin(if req.stdin.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Capture;

    #[track_caller]
    fn check(cap: usize, pushes: &[&[u8]], kept: &[u8], dropped: u64) {
        let mut c = Capture::new(cap);
        for p in pushes {
            c.push(p);
        }
        assert_eq!(c.finish(), (kept.to_vec(), dropped));
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        check(8, &[b"abc"], b"abc", 0);
        check(8, &[b"abcdefgh"], b"abcdefgh", 0);
        check(8, &[b"abcdefghij"], b"abcdghij", 2);
        check(
            8,
            &[b"ab", b"cd", b"ef", b"gh", b"ij", b"kl"],
            b"abcdijkl",
            4,
        );
        check(4, &[b"0123456789", b"x"], b"019x", 7);
        check(0, &[b"abc"], b"", 3);
    }
}
