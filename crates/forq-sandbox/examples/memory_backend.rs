//! A backend written outside forq-sandbox, with its public API alone: files
//! in memory, commands answered by a function the test gives. It is what an
//! embedder's test fake looks like (and the shape of a remote backend: a
//! `Snapshot` over its own `SnapshotSource`, a `Diff` from contents).
//!
//! ```text
//! cargo run -p forq-sandbox --example memory_backend
//! cargo test -p forq-sandbox --example memory_backend
//! ```
#![allow(clippy::print_stdout)] // an example talks to its user

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use forq_sandbox::{
    workspace_path, Backend, BackendKind, Diff, DirEntry, Error, ExecOutcome, ExecRequest, Result,
    Sandbox, SandboxSpec, Snapshot, SnapshotSource,
};

/// Files by workspace-relative path.
type Files = BTreeMap<String, Vec<u8>>;

/// What a command does: its request and the sandbox's files in, its
/// outcome out.
type Handler = Arc<dyn Fn(&ExecRequest, &mut Files) -> ExecOutcome + Send + Sync>;

/// A backend whose sandboxes hold files in memory.
#[derive(Clone)]
struct MemoryBackend {
    handler: Handler,
    next_id: Arc<Mutex<u64>>,
}

impl std::fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBackend").finish_non_exhaustive()
    }
}

impl MemoryBackend {
    fn new(
        handler: impl Fn(&ExecRequest, &mut Files) -> ExecOutcome + Send + Sync + 'static,
    ) -> Self {
        MemoryBackend {
            handler: Arc::new(handler),
            next_id: Arc::default(),
        }
    }

    fn sandbox(&self, base: Arc<Files>, files: Files) -> Box<dyn Sandbox> {
        let mut n = self.next_id.lock().expect("not poisoned");
        *n += 1;
        Box::new(MemorySandbox {
            id: format!("mem-{n}"),
            backend: self.clone(),
            base,
            files: Mutex::new(files),
        })
    }
}

/// Every regular file under `dir`, by relative path (`.git` left out).
fn read_tree(dir: &Path) -> Result<Files> {
    fn walk(root: &Path, dir: &Path, out: &mut Files) -> Result<()> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| Error::InvalidSpec(format!("{}: {e}", dir.display())))?;
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).expect("under the root");
            if rel.starts_with(".git") {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out)?;
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.insert(rel.to_string_lossy().replace('\\', "/"), bytes);
            }
        }
        Ok(())
    }
    let mut files = Files::new();
    walk(dir, dir, &mut files)?;
    Ok(files)
}

#[async_trait]
impl Backend for MemoryBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Custom
    }

    async fn create(&self, spec: &SandboxSpec) -> Result<Box<dyn Sandbox>> {
        let base = read_tree(&spec.base)?;
        Ok(self.sandbox(Arc::new(base.clone()), base))
    }
}

#[derive(Debug)]
struct MemorySandbox {
    id: String,
    backend: MemoryBackend,
    /// What it was created over: the diff's other side.
    base: Arc<Files>,
    files: Mutex<Files>,
}

/// A path as the map keys it, refused when it leaves the workspace.
fn key(path: &Path) -> Result<String> {
    Ok(workspace_path(path)?.to_string_lossy().into_owned())
}

#[async_trait]
impl Sandbox for MemorySandbox {
    fn id(&self) -> &str {
        &self.id
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Custom
    }

    async fn exec(&self, req: ExecRequest) -> Result<ExecOutcome> {
        let mut files = self.files.lock().expect("not poisoned");
        Ok((self.backend.handler)(&req, &mut files))
    }

    async fn read_file(&self, path: &Path) -> Result<Vec<u8>> {
        let key = key(path)?;
        let files = self.files.lock().expect("not poisoned");
        files.get(&key).cloned().ok_or_else(|| Error::Io {
            op: "read",
            path: path.to_owned(),
            source: std::io::ErrorKind::NotFound.into(),
        })
    }

    async fn write_file(&self, path: &Path, contents: &[u8]) -> Result<()> {
        let key = key(path)?;
        self.files
            .lock()
            .expect("not poisoned")
            .insert(key, contents.to_vec());
        Ok(())
    }

    async fn list_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let dir = key(path)?;
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let files = self.files.lock().expect("not poisoned");
        let mut entries: BTreeMap<String, DirEntry> = BTreeMap::new();
        for (name, bytes) in files.range(prefix.clone()..) {
            let Some(rest) = name.strip_prefix(&prefix) else {
                break;
            };
            let entry = match rest.split_once('/') {
                Some((sub, _)) => DirEntry::dir(sub),
                None => DirEntry::file(rest, bytes.len() as u64),
            };
            entries.insert(entry.name.clone(), entry);
        }
        Ok(entries.into_values().collect())
    }

    async fn remove(&self, path: &Path) -> Result<()> {
        let key = key(path)?;
        let below = format!("{key}/");
        self.files
            .lock()
            .expect("not poisoned")
            .retain(|name, _| *name != key && !name.starts_with(&below));
        Ok(())
    }

    async fn snapshot(&self) -> Result<Snapshot> {
        let frozen = Frozen {
            id: format!("{}-snap", self.id),
            backend: self.backend.clone(),
            base: self.base.clone(),
            files: self.files.lock().expect("not poisoned").clone(),
        };
        Ok(Snapshot::new(Arc::new(frozen)))
    }

    async fn diff(&self) -> Result<Diff> {
        let files = self.files.lock().expect("not poisoned");
        let paths: std::collections::BTreeSet<&String> =
            self.base.keys().chain(files.keys()).collect();
        Ok(Diff::from_contents(paths.into_iter().map(|p| {
            (
                p,
                self.base.get(p).map(Vec::as_slice),
                files.get(p).map(Vec::as_slice),
            )
        })))
    }

    async fn destroy(self: Box<Self>) -> Result<()> {
        Ok(())
    }
}

/// A frozen copy of a sandbox's files.
struct Frozen {
    id: String,
    backend: MemoryBackend,
    base: Arc<Files>,
    files: Files,
}

#[async_trait]
impl SnapshotSource for Frozen {
    fn id(&self) -> String {
        self.id.clone()
    }

    async fn fork(&self) -> Result<Box<dyn Sandbox>> {
        Ok(self.backend.sandbox(self.base.clone(), self.files.clone()))
    }
}

/// A "test runner" for the bundled calc example: green when `add` adds.
fn calc_tests(req: &ExecRequest, files: &mut Files) -> ExecOutcome {
    if req.argv.first().map(String::as_str) != Some("test") {
        return ExecOutcome::exited(127, "", format!("{}: not found\n", req.argv.join(" ")));
    }
    let adds = files
        .get("calc.py")
        .is_some_and(|c| String::from_utf8_lossy(c).contains("return a + b"));
    if adds {
        ExecOutcome::exited(0, "1 passed\n", "")
    } else {
        ExecOutcome::exited(1, "1 failed: add(2, 3) != 5\n", "")
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<()> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/calc");
    let backend: Arc<dyn Backend> = Arc::new(MemoryBackend::new(calc_tests));
    let root = backend.create(&SandboxSpec::new(&repo)).await?;
    let before = root.exec(ExecRequest::new(["test"])).await?;
    println!("before: exit {:?}", before.exit_code);
    let calc = String::from_utf8_lossy(&root.read_file(Path::new("calc.py")).await?).into_owned();
    for (name, from, to) in [("multiply", "a - b", "a * b"), ("add", "a - b", "a + b")] {
        let fork = root.fork().await?;
        fork.write_file(Path::new("calc.py"), calc.replace(from, to).as_bytes())
            .await?;
        let out = fork.exec(ExecRequest::new(["test"])).await?;
        println!("{name}: exit {:?}", out.exit_code);
        if out.success() {
            print!("{}", fork.diff().await?.patch);
        }
        fork.destroy().await?;
    }
    root.destroy().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend() -> MemoryBackend {
        MemoryBackend::new(calc_tests)
    }

    fn calc() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/calc")
    }

    #[tokio::test]
    async fn forks_start_from_the_snapshot_and_stay_independent() {
        let root = backend().create(&SandboxSpec::new(calc())).await.unwrap();
        let snap = root.snapshot().await.unwrap();
        root.write_file(Path::new("later.txt"), b"after the snapshot")
            .await
            .unwrap();
        let a = snap.fork().await.unwrap();
        let b = snap.fork().await.unwrap();
        assert!(a.read_file(Path::new("later.txt")).await.is_err());
        a.write_file(Path::new("a.txt"), b"a").await.unwrap();
        assert!(b.read_file(Path::new("a.txt")).await.is_err());
        assert_ne!(a.id(), b.id());
        assert_eq!(a.backend(), BackendKind::Custom);
    }

    #[tokio::test]
    async fn the_handler_judges_and_the_diff_is_a_patch_git_applies() {
        let root = backend().create(&SandboxSpec::new(calc())).await.unwrap();
        assert_eq!(
            root.exec(ExecRequest::new(["test"]))
                .await
                .unwrap()
                .exit_code,
            Some(1)
        );
        let fork = root.fork().await.unwrap();
        let calc_py = fork.read_file(Path::new("calc.py")).await.unwrap();
        let fixed = String::from_utf8(calc_py)
            .unwrap()
            .replace("a - b", "a + b");
        fork.write_file(Path::new("calc.py"), fixed.as_bytes())
            .await
            .unwrap();
        assert!(fork
            .exec(ExecRequest::new(["test"]))
            .await
            .unwrap()
            .success());
        let diff = fork.diff().await.unwrap();
        assert_eq!(diff.files.len(), 1);
        assert_eq!(diff.files[0].path, "calc.py");
        assert_eq!(diff.changed_lines(), 2);
        // The patch applies to the real repository's copy with git.
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(calc().join("calc.py"), dir.path().join("calc.py")).unwrap();
        std::fs::write(dir.path().join("fix.patch"), &diff.patch).unwrap();
        let applied = forq_sandbox::host_command("git")
            .args(["apply", "fix.patch"])
            .current_dir(dir.path())
            .status()
            .await
            .unwrap();
        assert!(applied.success(), "{}", diff.patch);
        assert!(std::fs::read_to_string(dir.path().join("calc.py"))
            .unwrap()
            .contains("return a + b"));
        // The root never saw the fork's change.
        assert!(root.diff().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn paths_that_leave_the_workspace_are_refused_and_dirs_list() {
        let root = backend().create(&SandboxSpec::new(calc())).await.unwrap();
        for bad in ["../escape.txt", "/etc/passwd"] {
            let err = root.write_file(Path::new(bad), b"x").await.unwrap_err();
            assert!(matches!(err, Error::PathEscape { .. }), "{bad}: {err}");
        }
        root.write_file(Path::new("pkg/sub/m.py"), b"x = 1\n")
            .await
            .unwrap();
        let listed = root.list_dir(Path::new("pkg")).await.unwrap();
        assert_eq!(listed, [DirEntry::dir("sub")]);
        root.remove(Path::new("pkg")).await.unwrap();
        assert!(root.list_dir(Path::new("pkg")).await.unwrap().is_empty());
        let top: Vec<String> = root
            .list_dir(Path::new(""))
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(top.contains(&"calc.py".to_owned()), "{top:?}");
    }
}
