//! A pseudo-terminal for an interactive command: the command gets the
//! slave side as its terminal, its caller relays the master side. The
//! caller's own terminal never reaches a sandbox.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use crate::os as sys;

/// A pseudo-terminal pair, opened on the host.
#[derive(Debug)]
pub struct Pty {
    /// The side the caller reads the command's output from and writes its
    /// input to.
    pub master: File,
    pub(crate) slave: Arc<OwnedFd>,
}

impl Pty {
    /// Opens a new pseudo-terminal, sized like the terminal `like` when it
    /// is one (e.g. the caller's standard input).
    pub fn open(like: Option<&impl AsRawFd>) -> std::io::Result<Pty> {
        let (master, slave) = sys::openpty()?;
        if let Some(like) = like {
            sys::copy_window_size(like.as_raw_fd(), master.as_raw_fd());
        }
        Ok(Pty {
            master,
            slave: Arc::new(slave),
        })
    }

    /// Sizes the pseudo-terminal whose master is `master` (this one's, or
    /// a clone of it) like the terminal `like`, after the caller's window
    /// changed.
    pub fn resize_like(master: &File, like: &impl AsRawFd) {
        sys::copy_window_size(like.as_raw_fd(), master.as_raw_fd());
    }
}

/// The caller's terminal in raw mode (no echo, no line editing, no signals
/// from keys: they go to the command's own terminal), restored on drop.
#[derive(Debug)]
pub struct RawMode {
    fd: i32,
    saved: libc::termios,
}

impl RawMode {
    /// Puts the terminal `fd` into raw mode; an error when it is not a
    /// terminal.
    pub fn enter(fd: &impl AsRawFd) -> std::io::Result<RawMode> {
        let fd = fd.as_raw_fd();
        let saved = sys::make_raw(fd)?;
        Ok(RawMode { fd, saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        sys::restore_terminal(self.fd, &self.saved);
    }
}
