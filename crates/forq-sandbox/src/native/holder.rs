//! The holder of user-namespace mode: a process that owns a user and a mount
//! namespace of its own, in which every overlay of a backend is mounted.
//! Nothing is mounted in the caller's namespace, so no root is needed, and
//! when the holder ends (its request pipe closes with the caller) its
//! mounts end with it.

use std::ffi::CString;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::sys;

/// A running holder.
#[derive(Debug)]
pub(crate) struct Holder {
    pid: u32,
    child: Mutex<std::process::Child>,
    /// Request writer and reply reader, used one call at a time.
    pipes: Mutex<(File, File)>,
    /// `/proc/<pid>/ns/user` and `/proc/<pid>/ns/mnt`, kept open so execs
    /// can join them.
    ns_user: File,
    ns_mnt: File,
}

impl Holder {
    /// Starts a holder mapping root inside to this process's uid and gid.
    pub(crate) fn start() -> std::io::Result<Holder> {
        let (req_r, req_w) = sys::pipe()?;
        let (rep_r, rep_w) = sys::pipe()?;
        let plan = Arc::new(sys::HolderPlan {
            uid_map: CString::new(format!("0 {} 1", sys::euid())).expect("digits"),
            gid_map: CString::new(format!("0 {} 1", sys::egid())).expect("digits"),
            requests: req_r,
            replies: rep_w,
        });
        let mut cmd = sys::helper_command();
        sys::install_holder(&mut cmd, plan);
        let spawned = cmd.spawn();
        sys::close(req_r);
        sys::close(rep_w);
        let (requests, replies) = (sys::file_from_fd(req_w), sys::file_from_fd(rep_r));
        let child = spawned?;
        let pid = child.id();
        let ns = |kind: &str| File::open(format!("/proc/{pid}/ns/{kind}"));
        let holder = Holder {
            pid,
            child: Mutex::new(child),
            pipes: Mutex::new((requests, replies)),
            ns_user: ns("user")?,
            ns_mnt: ns("mnt")?,
        };
        // One round trip proves it is up and serving.
        match holder.call(sys::HOLD_DETACH, &["/nonexistent-forq-probe"]) {
            Err(e)
                if e.raw_os_error() == Some(libc::ENOENT)
                    || e.raw_os_error() == Some(libc::EINVAL) =>
            {
                Ok(holder)
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(std::io::Error::other(
                "the kernel refused a user namespace (is /proc/sys/user/max_user_namespaces 0?)",
            )),
            Err(e) => Err(e),
            Ok(()) => Ok(holder),
        }
    }

    /// Sends one request and waits for its result.
    pub(crate) fn call(&self, op: u8, fields: &[&str]) -> std::io::Result<()> {
        let mut msg = vec![op];
        for f in fields {
            msg.extend_from_slice(f.as_bytes());
            msg.push(0);
        }
        let mut pipes = self.pipes.lock().expect("no panic while holding the lock");
        let (requests, replies) = &mut *pipes;
        requests.write_all(&(msg.len() as u32).to_ne_bytes())?;
        requests.write_all(&msg)?;
        let mut reply = [0u8; 4];
        replies.read_exact(&mut reply)?;
        match i32::from_ne_bytes(reply) {
            0 => Ok(()),
            errno => Err(std::io::Error::from_raw_os_error(errno)),
        }
    }

    /// `path` as this process reaches it inside the holder's namespace.
    pub(crate) fn reach(&self, path: &Path) -> PathBuf {
        Path::new(&format!("/proc/{}/root", self.pid)).join(path.strip_prefix("/").unwrap_or(path))
    }

    /// The mount table of the holder's namespace.
    pub(crate) fn mountinfo(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/mountinfo", self.pid))
    }

    /// A network namespace owned by the holder's user namespace, with a
    /// listener on `127.0.0.1:port` inside it (the egress proxy's, without
    /// root).
    pub(crate) fn net_namespace_with_listener(
        &self,
        port: u16,
    ) -> std::io::Result<(File, std::net::TcpListener)> {
        use std::os::fd::AsRawFd;
        let user = self.ns_user.as_raw_fd();
        sys::run_helper(
            |cmd, ready| sys::install_net_helper(cmd, user, ready, port),
            |ready, pid| {
                let mut number = [0u8; 4];
                ready.read_exact(&mut number)?;
                let socket = sys::take_fd(pid, i32::from_ne_bytes(number))?;
                let netns = File::open(format!("/proc/{pid}/ns/net"))?;
                Ok((netns, std::net::TcpListener::from(socket)))
            },
        )
    }

    /// Descriptors of the namespaces an exec joins.
    pub(crate) fn namespaces(&self) -> (&File, &File) {
        (&self.ns_user, &self.ns_mnt)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        // Closing the request pipe ends the holder; kill in case it hangs.
        let child = self
            .child
            .get_mut()
            .expect("no panic while holding the lock");
        let _ = child.kill();
        let _ = child.wait();
    }
}
