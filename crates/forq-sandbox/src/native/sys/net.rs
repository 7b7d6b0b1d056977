//! Network namespaces: the egress proxy's and a service's, listeners made
//! inside them, and the loopback brought up.
#![allow(unsafe_code)]

#[allow(clippy::wildcard_imports)] // the module's shared calls and imports
use super::*;

/// A TCP listener on `127.0.0.1:port` inside the network namespace `ns`
/// (a container's), made on a thread of its own that joins it and ends.
#[cfg_attr(not(feature = "docker"), allow(dead_code))] // the docker backend's
pub(crate) fn listener_in(ns: &std::fs::File, port: u16) -> io::Result<std::net::TcpListener> {
    use std::os::fd::AsRawFd;
    let fd = ns.as_raw_fd();
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                // SAFETY: setns on this thread alone, which ends right after.
                if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                std::net::TcpListener::bind(("127.0.0.1", port))
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
    })
}

/// A new network namespace with its loopback up and a TCP listener on
/// `127.0.0.1:port` inside it, made on a thread of its own (a namespace is
/// per thread) that ends at once: the namespace lives on in the returned
/// descriptor and the socket.
pub(crate) fn net_namespace_with_listener(
    port: u16,
) -> io::Result<(std::fs::File, std::net::TcpListener)> {
    std::thread::spawn(move || {
        // SAFETY: unshare on this thread alone, which ends right after.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if !loopback_up() {
            return Err(io::Error::other("cannot bring up the loopback interface"));
        }
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        let ns = std::fs::File::open("/proc/thread-self/ns/net")?;
        Ok((ns, listener))
    })
    .join()
    .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
}

/// A thread in a new network namespace (its loopback up) that stays there,
/// connecting to its `127.0.0.1` ports on request: what reaches a service
/// running in a sandbox that has no network of its own. Needs root.
pub(crate) fn service_namespace() -> io::Result<crate::service::ServiceNetwork> {
    crate::service::ServiceNetwork::spawn(|| {
        // SAFETY: unshare on this thread alone, which serves only this.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if !loopback_up() {
            return Err(io::Error::other("cannot bring up the loopback interface"));
        }
        Ok(())
    })
}

/// A thread inside the network namespace `netns` (a container's), staying
/// there to connect to its ports (see [`service_namespace`]).
#[cfg_attr(not(feature = "docker"), allow(dead_code))]
pub(crate) fn service_in(netns: std::fs::File) -> io::Result<crate::service::ServiceNetwork> {
    crate::service::ServiceNetwork::spawn(move || {
        use std::os::fd::AsRawFd;
        // SAFETY: setns on this thread alone, with a namespace file we hold.
        if unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    })
}

/// Installs on `cmd` a process that enters the user namespace `user` (the
/// holder's), makes a network namespace there with its loopback up and a
/// TCP listener on `127.0.0.1:port`, writes the listener's descriptor
/// number on `ready` and sleeps until killed: its parent takes the
/// listener with `pidfd_getfd` and the namespace from `/proc`. It never
/// execs. (Without root, only a process inside the holder's user namespace
/// may make a network namespace the sandbox can join.)
pub(crate) fn install_net_helper(
    cmd: &mut std::process::Command,
    user: RawFd,
    ready: RawFd,
    port: u16,
) {
    use std::os::unix::process::CommandExt;
    // SAFETY: as for `install`: system calls on descriptors, a stack
    // sockaddr and a stack buffer.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(user, libc::CLONE_NEWUSER) != 0
                || libc::unshare(libc::CLONE_NEWNET) != 0
                || !loopback_up()
            {
                return Err(io::Error::last_os_error());
            }
            let sock = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if sock < 0 {
                return Err(io::Error::last_os_error());
            }
            let addr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: port.to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
                },
                sin_zero: [0; 8],
            };
            if libc::bind(
                sock,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ) != 0
                || libc::listen(sock, 128) != 0
            {
                return Err(io::Error::last_os_error());
            }
            let number = sock.to_ne_bytes();
            libc::write(ready, number.as_ptr().cast(), number.len());
            // Keep the socket; let go of everything else (the caller's
            // spawn returns once its close-on-exec pipe is closed here).
            let keep = sock;
            libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32);
            libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
            loop {
                libc::pause();
            }
        });
    }
}
