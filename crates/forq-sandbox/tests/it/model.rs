//! A property test of the native backend's layering: random writes,
//! deletions and forks over a tree of sandboxes, checked against a model
//! where a fork is a copy of a map. Covers frozen layers, whiteouts, opaque
//! directories and squashing, because the chains grow past `MAX_LAYERS`.

use std::collections::BTreeMap;
use std::path::Path;

use forq_sandbox::{ChangeKind, ExecRequest, Sandbox};
use proptest::prelude::*;

use crate::common::Harness;

const PATHS: &[&str] = &["a.txt", "d/b.txt", "d/e/c.txt", "f.txt", "d/new.txt"];

#[derive(Debug, Clone)]
enum Op {
    /// Write through the file API.
    Write { sb: usize, path: usize, byte: u8 },
    /// Write from inside, through a command.
    ExecWrite { sb: usize, path: usize, byte: u8 },
    /// Delete a file, or the whole `d` directory.
    Remove {
        sb: usize,
        path: usize,
        whole_dir: bool,
    },
    /// Fork a sandbox; the child joins the pool.
    Fork { sb: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..8usize, 0..PATHS.len(), any::<u8>()).prop_map(|(sb, path, byte)| Op::Write { sb, path, byte }),
        2 => (0..8usize, 0..PATHS.len(), any::<u8>()).prop_map(|(sb, path, byte)| Op::ExecWrite { sb, path, byte }),
        2 => (0..8usize, 0..PATHS.len(), any::<bool>()).prop_map(|(sb, path, whole_dir)| Op::Remove { sb, path, whole_dir }),
        3 => (0..8usize).prop_map(|sb| Op::Fork { sb }),
    ]
}

type Model = BTreeMap<String, Vec<u8>>;

fn base_model() -> Model {
    [
        ("a.txt", "base a\n"),
        ("d/b.txt", "base b\n"),
        ("d/e/c.txt", "base c\n"),
    ]
    .into_iter()
    .map(|(p, c)| (p.to_owned(), c.as_bytes().to_vec()))
    .collect()
}

async fn run(ops: Vec<Op>) {
    let Some(h) = Harness::native().await else {
        return;
    };
    let repo = tempfile::tempdir().unwrap();
    for (path, content) in base_model() {
        let full = repo.path().join(&path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, content).unwrap();
    }
    let backend = h.backend.clone();
    let first = backend
        .create(&forq_sandbox::SandboxSpec::new(repo.path()))
        .await
        .unwrap();
    let mut pool: Vec<(Box<dyn Sandbox>, Model)> = vec![(first, base_model())];
    for op in ops {
        let n = pool.len();
        match op {
            Op::Write { sb, path, byte } => {
                let (s, m) = &mut pool[sb % n];
                let content = vec![b'w', byte, b'\n'];
                s.write_file(Path::new(PATHS[path]), &content)
                    .await
                    .unwrap();
                m.insert(PATHS[path].to_owned(), content);
            }
            Op::ExecWrite { sb, path, byte } => {
                let (s, m) = &mut pool[sb % n];
                let p = PATHS[path];
                let dir = Path::new(p).parent().unwrap().display().to_string();
                let script = format!("mkdir -p ./{dir} && printf 'x{byte:03}' > {p}");
                assert!(s.exec(ExecRequest::shell(script)).await.unwrap().success());
                m.insert(p.to_owned(), format!("x{byte:03}").into_bytes());
            }
            Op::Remove {
                sb,
                path,
                whole_dir,
            } => {
                let (s, m) = &mut pool[sb % n];
                if whole_dir {
                    if m.keys().any(|k| k.starts_with("d/")) {
                        s.remove(Path::new("d")).await.unwrap();
                        m.retain(|k, _| !k.starts_with("d/"));
                    }
                } else if m.remove(PATHS[path]).is_some() {
                    s.remove(Path::new(PATHS[path])).await.unwrap();
                }
            }
            Op::Fork { sb } => {
                let i = sb % n;
                let child = pool[i].0.fork().await.unwrap();
                let model = pool[i].1.clone();
                pool.push((child, model));
            }
        }
    }
    let base = base_model();
    for (i, (s, m)) in pool.iter().enumerate() {
        for p in PATHS {
            let got = s.read_file(Path::new(p)).await.ok();
            assert_eq!(got.as_ref(), m.get(*p), "sandbox {i}, {p}");
        }
        let diff = s.diff().await.unwrap();
        let got: Vec<(String, ChangeKind)> = diff
            .files
            .iter()
            .map(|f| (f.path.clone(), f.kind))
            .collect();
        let mut want: Vec<(String, ChangeKind)> = Vec::new();
        for p in PATHS {
            let kind = match (base.get(*p), m.get(*p)) {
                (None, Some(_)) => ChangeKind::Added,
                (Some(_), None) => ChangeKind::Deleted,
                (Some(a), Some(b)) if a != b => ChangeKind::Modified,
                _ => continue,
            };
            want.push(((*p).to_owned(), kind));
        }
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got, want, "sandbox {i}:\n{}", diff.patch);
    }
    for (s, _) in pool {
        s.destroy().await.unwrap();
    }
    // The backend's own idmapped views stay while it is open; no sandbox's.
    assert_eq!(
        h.native.as_ref().unwrap().mounts(),
        Vec::<std::path::PathBuf>::new()
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn fork_trees_match_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(run(ops));
    }
}
