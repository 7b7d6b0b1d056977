//! Resource caps through cgroups: v2 where it is mounted with controllers,
//! else the v1 hierarchies of each controller, else nothing (rlimits).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::spec::Limits;

/// Which cgroup interface this machine offers.
#[derive(Debug, Clone)]
pub(crate) enum Cgroups {
    /// Unified hierarchy with the memory, pids and cpu controllers.
    V2 { root: PathBuf },
    /// Legacy hierarchies, each controller found where it is mounted.
    V1 {
        memory: Option<PathBuf>,
        pids: Option<PathBuf>,
        cpu: Option<PathBuf>,
    },
    /// No usable controller.
    None,
}

const PARENT: &str = "forq";

impl Cgroups {
    /// Looks at `/proc/self/mountinfo` for usable controllers. Only root can
    /// create cgroups here, so anyone else gets `None`.
    pub(crate) fn detect() -> Cgroups {
        if super::sys::euid() != 0 {
            return Cgroups::None;
        }
        let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
            return Cgroups::None;
        };
        let mut v1 = (None, None, None);
        for line in info.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let mount_point = left.split(' ').nth(4).unwrap_or_default();
            let mut r = right.split(' ');
            let fstype = r.next().unwrap_or_default();
            let super_opts = r.nth(1).unwrap_or_default();
            if fstype == "cgroup2" {
                let root = PathBuf::from(mount_point);
                let controllers =
                    std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
                let has = |c: &str| controllers.split_whitespace().any(|x| x == c);
                if has("memory") && has("pids") {
                    return Cgroups::V2 { root };
                }
            } else if fstype == "cgroup" {
                let opts: Vec<&str> = super_opts.split(',').collect();
                let p = PathBuf::from(mount_point);
                if opts.contains(&"memory") {
                    v1.0 = Some(p.clone());
                }
                if opts.contains(&"pids") {
                    v1.1 = Some(p.clone());
                }
                if opts.contains(&"cpu") {
                    v1.2 = Some(p);
                }
            }
        }
        match v1 {
            (None, None, None) => Cgroups::None,
            (memory, pids, cpu) => Cgroups::V1 { memory, pids, cpu },
        }
    }

    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Cgroups::V2 { .. } => "cgroup v2",
            Cgroups::V1 { .. } => "cgroup v1",
            Cgroups::None => "rlimits only",
        }
    }

    /// The `forq` parent directories of every hierarchy in use.
    fn parents(&self) -> Vec<PathBuf> {
        match self {
            Cgroups::V2 { root } => vec![root.join(PARENT)],
            Cgroups::V1 { memory, pids, cpu } => [memory, pids, cpu]
                .into_iter()
                .flatten()
                .map(|r| r.join(PARENT))
                .collect(),
            Cgroups::None => Vec::new(),
        }
    }

    /// Removes the exec cgroups whose owner (by name, `<pid>-...`) `dead`
    /// says is gone, killing anything still in them.
    pub(crate) fn gc(&self, dead: impl Fn(&str) -> bool) -> Vec<PathBuf> {
        let mut removed = Vec::new();
        for parent in self.parents() {
            let Ok(entries) = std::fs::read_dir(&parent) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if !entry.path().is_dir() || !dead(&name) {
                    continue;
                }
                let dir = entry.path();
                let group = Group {
                    procs: Some(dir.join("cgroup.procs")),
                    oom_file: None,
                    dirs: vec![dir.clone()],
                };
                group.remove();
                if !dir.exists() {
                    removed.push(dir);
                }
            }
        }
        removed
    }

    /// Which of memory, pids and cpu a cgroup caps here.
    pub(crate) fn enforces(&self) -> (bool, bool, bool) {
        match self {
            Cgroups::V2 { .. } => (true, true, true),
            Cgroups::V1 { memory, pids, cpu } => (memory.is_some(), pids.is_some(), cpu.is_some()),
            Cgroups::None => (false, false, false),
        }
    }

    /// Whether memory can be capped (and an OOM kill seen) through cgroups.
    pub(crate) fn caps_memory(&self) -> bool {
        matches!(
            self,
            Cgroups::V2 { .. }
                | Cgroups::V1 {
                    memory: Some(_),
                    ..
                }
        )
    }

    /// Creates the cgroup(s) of one exec with `limits` applied.
    /// Without limits there is no cgroup at all: joining one costs an RCU
    /// grace period now and then (see ARCHITECTURE.md), and the exec's pid
    /// namespace already ends every process of it.
    pub(crate) fn create(&self, name: &str, limits: &Limits) -> Result<Group> {
        let mut group = Group::default();
        if limits.memory_bytes.is_none() && limits.pids.is_none() && limits.cpus.is_none() {
            return Ok(group);
        }
        match self {
            Cgroups::None => {
                if limits.pids.is_some() || limits.cpus.is_some() {
                    static SAID: std::sync::Once = std::sync::Once::new();
                    SAID.call_once(|| {
                        tracing::warn!(
                            "the pids and CPU caps are not enforced: no cgroup can be made here \
                             (it needs root, or a delegated cgroup); memory is capped by rlimit only"
                        );
                    });
                }
            }
            Cgroups::V2 { root } => {
                let parent = root.join(PARENT);
                if !parent.exists() {
                    mkdir(&parent)?;
                    // Best effort: the controllers may already be enabled.
                    let _ =
                        std::fs::write(root.join("cgroup.subtree_control"), "+memory +pids +cpu");
                    let _ =
                        std::fs::write(parent.join("cgroup.subtree_control"), "+memory +pids +cpu");
                }
                let dir = parent.join(name);
                mkdir(&dir)?;
                if let Some(m) = limits.memory_bytes {
                    write(&dir.join("memory.max"), &m.to_string())?;
                    let _ = std::fs::write(dir.join("memory.swap.max"), "0");
                }
                if let Some(p) = limits.pids {
                    write(&dir.join("pids.max"), &p.to_string())?;
                }
                if let Some(c) = limits.cpus {
                    write(
                        &dir.join("cpu.max"),
                        &format!("{} 100000", (c * 100_000.0) as u64),
                    )?;
                }
                group.oom_file = Some(dir.join("memory.events"));
                group.procs = Some(dir.join("cgroup.procs"));
                group.dirs.push(dir);
            }
            Cgroups::V1 { memory, pids, cpu } => {
                if let (Some(root), Some(_)) = (pids, limits.pids) {
                    let dir = ensure_v1(root, name)?;
                    if let Some(p) = limits.pids {
                        write(&dir.join("pids.max"), &p.to_string())?;
                    }
                    group.procs = Some(dir.join("cgroup.procs"));
                    group.dirs.push(dir);
                }
                if let (Some(root), Some(m)) = (memory, limits.memory_bytes) {
                    let dir = ensure_v1(root, name)?;
                    write(&dir.join("memory.limit_in_bytes"), &m.to_string())?;
                    group.procs.get_or_insert(dir.join("cgroup.procs"));
                    // Without this the kernel swaps instead of killing.
                    let _ = std::fs::write(dir.join("memory.memsw.limit_in_bytes"), m.to_string());
                    let _ = std::fs::write(dir.join("memory.swappiness"), "0");
                    group.oom_file = Some(dir.join("memory.oom_control"));
                    group.dirs.push(dir);
                }
                if let (Some(root), Some(c)) = (cpu, limits.cpus) {
                    let dir = ensure_v1(root, name)?;
                    write(&dir.join("cpu.cfs_period_us"), "100000")?;
                    group.procs.get_or_insert(dir.join("cgroup.procs"));
                    write(
                        &dir.join("cpu.cfs_quota_us"),
                        &((c * 100_000.0) as u64).to_string(),
                    )?;
                    group.dirs.push(dir);
                }
            }
        }
        Ok(group)
    }
}

fn ensure_v1(root: &Path, name: &str) -> Result<PathBuf> {
    let parent = root.join(PARENT);
    if !parent.exists() {
        mkdir(&parent)?;
    }
    let dir = parent.join(name);
    mkdir(&dir)?;
    Ok(dir)
}

fn mkdir(dir: &Path) -> Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io("create cgroup", dir, e)),
    }
}

fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| Error::io("write cgroup limit", path, e))
}

/// The cgroup directories of one exec.
#[derive(Debug, Default)]
pub(crate) struct Group {
    dirs: Vec<PathBuf>,
    procs: Option<PathBuf>,
    oom_file: Option<PathBuf>,
}

impl Group {
    /// The `cgroup.procs` files the exec's first process writes itself into.
    pub(crate) fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    /// Kills every process in the group; returns how many were still alive.
    pub(crate) fn kill_all(&self) -> usize {
        let Some(procs) = &self.procs else { return 0 };
        let Ok(list) = std::fs::read_to_string(procs) else {
            return 0;
        };
        let mut n = 0;
        for pid in list.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            super::sys::kill(pid);
            n += 1;
        }
        n
    }

    /// Whether the kernel's OOM killer acted inside the group.
    pub(crate) fn oom_killed(&self) -> bool {
        let Some(file) = &self.oom_file else {
            return false;
        };
        let Ok(text) = std::fs::read_to_string(file) else {
            return false;
        };
        text.lines().any(|l| {
            let mut it = l.split_whitespace();
            it.next() == Some("oom_kill")
                && it.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) > 0
        })
    }

    /// Kills what is left and removes the directories (also done on drop,
    /// so an exec whose future is dropped midway leaves no cgroup behind).
    pub(crate) fn remove(mut self) {
        self.cleanup();
    }

    fn cleanup(&mut self) {
        for _ in 0..200 {
            if self.kill_all() == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for dir in std::mem::take(&mut self.dirs) {
            for _ in 0..100 {
                match std::fs::remove_dir(&dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(2)),
                }
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.cleanup();
    }
}
