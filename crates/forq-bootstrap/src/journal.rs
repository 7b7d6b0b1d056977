//! The run record as the gate goes: marked when work starts, at every
//! phase, and when it ends, in `.forq/bootstrap/run.json` and (when the
//! caller gives a store) a row of a SQLite table, so an interrupted run
//! shows where it stopped.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection};
use serde::Serialize;

use crate::gate::Record;

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Writes `bytes` to `path` whole: a temporary file renamed over it. Every
/// directory from the repository's `.forq` down is refused when it is a
/// link (a repository could commit `.forq/bootstrap -> /etc`), the
/// temporary file is made new (`O_EXCL` follows no link), and the rename
/// replaces a link at `path` rather than writing through it.
pub(crate) fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    refuse_links_from_forq(dir)?;
    std::fs::create_dir_all(dir)?;
    refuse_links_from_forq(dir)?;
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    file.write_all(bytes)?;
    drop(file);
    std::fs::rename(&tmp, path)
}

/// Refuses `dir` and each of its ancestors up to the nearest `.forq` when
/// one of them is a symbolic link.
pub(crate) fn refuse_links_from_forq(dir: &Path) -> std::io::Result<()> {
    if !dir.iter().any(|c| c == ".forq") {
        return forq_sandbox::refuse_link(dir);
    }
    for d in dir.ancestors() {
        forq_sandbox::refuse_link(d)?;
        if d.file_name().is_some_and(|n| n == ".forq") {
            break;
        }
    }
    Ok(())
}

/// `.forq/` holds forq's own files, never the repository's: a `.gitignore`
/// keeps git (and forq's diffs) from seeing them.
pub(crate) fn ignore_forq_dir(repo: &Path) -> std::io::Result<()> {
    let dir = repo.join(".forq");
    forq_sandbox::refuse_link(&dir)?;
    std::fs::create_dir_all(&dir)?;
    forq_sandbox::refuse_link(&dir)?;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(".gitignore"))
    {
        Ok(mut f) => std::io::Write::write_all(&mut f, b"*\n"),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Where the record of the latest run of `repo` lives.
pub fn run_record_path(repo: &Path) -> PathBuf {
    repo.join(".forq").join("bootstrap").join("run.json")
}

/// The record on disk: the gate's record and where the run stands.
#[derive(Serialize)]
struct Marked<'a> {
    /// `running` until the gate returns, then `finished`.
    state: &'a str,
    /// What was running at the last mark (`detect`, `install rust: cargo
    /// fetch`, `test rust: cargo test …`, `done`).
    phase: &'a str,
    started_at_ms: u64,
    updated_at_ms: u64,
    record: &'a Record,
}

/// The journal of one gate run.
pub(crate) struct Journal {
    file: PathBuf,
    /// Behind a mutex so the gate's future is `Send` (a connection is not
    /// `Sync`).
    db: Option<std::sync::Mutex<(Connection, i64)>>,
    started_at_ms: u64,
}

/// The table a store gets (created when missing).
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS bootstrap_runs (
    id INTEGER PRIMARY KEY,
    repo TEXT NOT NULL,
    state TEXT NOT NULL,
    phase TEXT NOT NULL,
    verdict TEXT,
    started_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    record TEXT NOT NULL
)";

impl Journal {
    /// Opens the journal of a run starting now: the run file, and a row in
    /// `store` when one is given.
    pub(crate) fn start(
        repo: &Path,
        store: Option<&Path>,
        record: &Record,
    ) -> Result<Journal, JournalError> {
        ignore_forq_dir(repo).map_err(|e| JournalError::File(run_record_path(repo), e))?;
        let started_at_ms = now_ms();
        let db = match store {
            None => None,
            Some(path) => {
                let open = || -> rusqlite::Result<(Connection, i64)> {
                    let conn = Connection::open(path)?;
                    conn.busy_timeout(std::time::Duration::from_secs(5))?;
                    conn.execute_batch(SCHEMA)?;
                    conn.execute(
                        "INSERT INTO bootstrap_runs (repo, state, phase, started_at_ms, updated_at_ms, record)
                         VALUES (?1, 'running', 'detect', ?2, ?2, ?3)",
                        params![
                            repo.to_string_lossy(),
                            started_at_ms as i64,
                            serde_json::to_string(record).unwrap_or_default()
                        ],
                    )?;
                    let id = conn.last_insert_rowid();
                    Ok((conn, id))
                };
                Some(std::sync::Mutex::new(open().map_err(|e| {
                    JournalError::Store(path.to_owned(), Box::new(e))
                })?))
            }
        };
        let journal = Journal {
            file: run_record_path(repo),
            db,
            started_at_ms,
        };
        journal.mark("running", "detect", record)?;
        Ok(journal)
    }

    /// Marks where the run stands.
    pub(crate) fn mark(
        &self,
        state: &str,
        phase: &str,
        record: &Record,
    ) -> Result<(), JournalError> {
        let now = now_ms();
        let marked = Marked {
            state,
            phase,
            started_at_ms: self.started_at_ms,
            updated_at_ms: now,
            record,
        };
        let bytes = serde_json::to_vec_pretty(&marked).unwrap_or_default();
        write_whole(&self.file, &bytes).map_err(|e| JournalError::File(self.file.clone(), e))?;
        if let Some(db) = &self.db {
            let guard = db.lock().unwrap_or_else(|p| p.into_inner());
            let (conn, id) = &*guard;
            let verdict = Some(record.verdict.name());
            conn.execute(
                "UPDATE bootstrap_runs SET state = ?1, phase = ?2, verdict = ?3, updated_at_ms = ?4, record = ?5
                 WHERE id = ?6",
                params![
                    state,
                    phase,
                    (state == "finished").then_some(verdict).flatten(),
                    now as i64,
                    serde_json::to_string(record).unwrap_or_default(),
                    id
                ],
            )
            .map_err(|e| {
                JournalError::Store(PathBuf::from(conn.path().unwrap_or("")), Box::new(e))
            })?;
        }
        Ok(())
    }
}

/// The journal could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The run file.
    #[error("cannot write the bootstrap run record {0:?}")]
    File(PathBuf, #[source] std::io::Error),
    /// The SQLite store.
    #[error("cannot record the bootstrap run in the store {0:?}")]
    Store(PathBuf, #[source] Box<dyn std::error::Error + Send + Sync>),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attack (forq's adversarial corpus, SECURITY.md): a repository
    /// commits `.forq/bootstrap` as a link to a host directory; the journal
    /// and the recipe cache write there as root. Nothing is written
    /// through it.
    #[test]
    fn a_linked_forq_bootstrap_is_never_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let host = tmp.path().join("host-etc");
        std::fs::create_dir_all(&host).unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".forq")).unwrap();
        std::os::unix::fs::symlink(&host, repo.join(".forq/bootstrap")).unwrap();
        let err = write_whole(&run_record_path(&repo), b"{}").expect_err("refused");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(
            std::fs::read_dir(&host).unwrap().count(),
            0,
            "nothing landed on the host"
        );

        // A linked .forq itself, and a link planted at the .gitignore's name.
        let repo2 = tmp.path().join("repo2");
        std::fs::create_dir_all(&repo2).unwrap();
        std::os::unix::fs::symlink(&host, repo2.join(".forq")).unwrap();
        assert!(ignore_forq_dir(&repo2).is_err());
        let repo3 = tmp.path().join("repo3");
        std::fs::create_dir_all(repo3.join(".forq")).unwrap();
        std::os::unix::fs::symlink(host.join("planted"), repo3.join(".forq/.gitignore")).unwrap();
        ignore_forq_dir(&repo3).unwrap();
        assert!(
            !host.join("planted").exists(),
            "the planted link was not written through"
        );
    }
}
