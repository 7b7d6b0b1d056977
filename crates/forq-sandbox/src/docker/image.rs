//! Images: the default busybox image built from the host's static
//! busybox, and the workspace sent as a tar.

#[allow(clippy::wildcard_imports)] // the backend's own types and imports
use super::*;

/// A rootfs tarball holding a static busybox and its applet links.
pub(super) fn busybox_rootfs(busybox: &Path) -> Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    let add_dir =
        |b: &mut tar::Builder<Vec<u8>>, name: &str, mode: u32, owner: u32| -> std::io::Result<()> {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(mode);
            h.set_uid(owner.into());
            h.set_gid(owner.into());
            h.set_size(0);
            b.append_data(&mut h, name, std::io::empty())
        };
    let build = |b: &mut tar::Builder<Vec<u8>>| -> std::io::Result<()> {
        for (d, mode, owner) in [
            ("bin", 0o755, 0),
            ("tmp", 0o1777, 0),
            ("workspace", 0o755, SANDBOX_USER.0),
            ("etc", 0o755, 0),
            ("root", 0o700, 0),
            ("home", 0o755, 0),
            ("home/sandbox", 0o755, SANDBOX_USER.0),
        ] {
            add_dir(b, d, mode, owner)?;
        }
        let bytes = std::fs::read(busybox)?;
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o755);
        h.set_size(bytes.len() as u64);
        b.append_data(&mut h, "bin/busybox", &bytes[..])?;
        for applet in [
            "sh", "ash", "sleep", "cat", "ls", "echo", "true", "false", "rm", "mkdir", "cp", "mv",
            "kill", "ps", "env", "wc", "readlink", "realpath", "find", "grep", "sed", "head",
            "tail", "dd", "nc", "wget", "touch", "stat", "id", "test", "printf", "yes", "seq",
            "sort", "uniq", "tr", "chmod", "ln", "pwd", "diff", "patch", "awk", "xargs", "timeout",
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_mode(0o777);
            h.set_size(0);
            b.append_link(&mut h, format!("bin/{applet}"), "busybox")?;
        }
        let (uid, home) = SANDBOX_USER;
        let passwd =
            format!("root:x:0:0:root:/root:/bin/sh\nsandbox:x:{uid}:{uid}::{home}:/bin/sh\n");
        let group = format!("root:x:0:\nsandbox:x:{uid}:\n");
        for (name, text) in [("etc/passwd", passwd), ("etc/group", group)] {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o644);
            h.set_size(text.len() as u64);
            b.append_data(&mut h, name, text.as_bytes())?;
        }
        Ok(())
    };
    build(&mut b).map_err(|e| Error::io("build the busybox rootfs", busybox, e))?;
    b.into_inner()
        .map_err(|e| Error::io("build the busybox rootfs", busybox, e))
}

/// Imports a rootfs tarball as image `tag` (what `docker import` does), so
/// tests and benchmarks never need a registry.
pub async fn import_rootfs(docker: &Docker, tarball: Vec<u8>, tag: &str) -> Result<()> {
    let (repo, tag) = tag.rsplit_once(':').unwrap_or((tag, "latest"));
    let options = CreateImageOptions {
        from_src: Some("-".to_owned()),
        repo: Some(repo.to_owned()),
        tag: Some(tag.to_owned()),
        ..Default::default()
    };
    let mut stream = docker.create_image(
        Some(options),
        Some(bollard::body_full(bytes::Bytes::from(tarball))),
        None,
    );
    while let Some(step) = stream.next().await {
        step.map_err(docker_err("import image"))?;
    }
    Ok(())
}

/// A tar of `base` with every entry under `workspace/`, owned by `owner`
/// when given (the container's user), else as on the host.
pub(super) fn workspace_tar(base: &Path, owner: Option<u32>) -> Result<Vec<u8>> {
    let fail = |e: std::io::Error| Error::io("pack the workspace", base, e);
    let mut b = tar::Builder::new(Vec::new());
    for entry in walkdir::WalkDir::new(base).follow_links(false) {
        let entry = entry.map_err(|e| fail(e.into()))?;
        let rel = entry.path().strip_prefix(base).expect("under its root");
        let name = Path::new("workspace").join(rel);
        let meta = entry.path().symlink_metadata().map_err(fail)?;
        let mut h = tar::Header::new_gnu();
        h.set_metadata(&meta);
        if let Some(owner) = owner {
            h.set_uid(owner.into());
            h.set_gid(owner.into());
        }
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(entry.path()).map_err(fail)?;
            b.append_link(&mut h, &name, target).map_err(fail)?;
        } else if meta.is_dir() {
            h.set_size(0);
            b.append_data(&mut h, &name, std::io::empty())
                .map_err(fail)?;
        } else if meta.is_file() {
            let file = std::fs::File::open(entry.path()).map_err(fail)?;
            b.append_data(&mut h, &name, file).map_err(fail)?;
        }
    }
    b.into_inner().map_err(fail)
}
