//! The egress proxy of install steps: an HTTP proxy (CONNECT for TLS, plain
//! requests in absolute form) that forq runs on the host and that a
//! sandbox reaches only through a listener inside its own network
//! namespace. It lets through the host names an allowlist names (the
//! detected stack's package registries, plus what the operator adds) and
//! nothing else: not host loopback, not a private address a name resolves
//! to, not another host.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Where the proxy listens inside a sandbox's network namespace.
pub const PROXY_PORT: u16 = 3128;

/// The largest request head the proxy reads.
const MAX_HEAD: usize = 16 * 1024;

/// A program that serves the egress proxy on its own ([`serve_egress`]):
/// what the docker backend runs in a sidecar container when it cannot serve
/// the proxy inside the sandbox's network namespace. The program is copied
/// into an image with the shared libraries it loads, so it must be built
/// for the engine's architecture.
///
/// ```
/// use forq_sandbox::{default_egress_program, set_default_egress_program, EgressProgram};
///
/// // A binary that serves the proxy when run as `my-tool egress-proxy`.
/// let me = EgressProgram::new("/usr/local/bin/my-tool", ["egress-proxy"]);
/// assert!(set_default_egress_program(me.clone()));
/// assert_eq!(default_egress_program(), Some(me));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressProgram {
    /// The executable on this machine.
    pub path: std::path::PathBuf,
    /// Arguments that make it serve the proxy (a subcommand, if any).
    pub args: Vec<String>,
}

impl EgressProgram {
    /// `path args...`.
    pub fn new<I, S>(path: impl Into<std::path::PathBuf>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EgressProgram {
            path: path.into(),
            args: args.into_iter().map(Into::into).collect(),
        }
    }
}

static DEFAULT_PROGRAM: std::sync::OnceLock<EgressProgram> = std::sync::OnceLock::new();

/// Sets, once per process, the egress program that backends opened with
/// default options use (the `forq` binary registers itself). Returns
/// `false` if one was already set.
pub fn set_default_egress_program(program: EgressProgram) -> bool {
    DEFAULT_PROGRAM.set(program).is_ok()
}

/// The program [`set_default_egress_program`] registered.
pub fn default_egress_program() -> Option<EgressProgram> {
    DEFAULT_PROGRAM.get().cloned()
}

/// The line [`serve_egress`] prints once it listens.
pub const EGRESS_READY: &str = "forq egress proxy listening on";

/// Serves the egress proxy for `allow` on `addr` until the process ends,
/// after printing one line that starts with [`EGRESS_READY`] to standard
/// output. The entry point of an [`EgressProgram`].
pub async fn serve_egress(addr: SocketAddr, allow: EgressAllow) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr).await?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{EGRESS_READY} {}", listener.local_addr()?)?;
        out.flush()?;
    }
    serve(listener, Arc::new(allow))
        .await
        .map_err(std::io::Error::other)
}

/// Host names an install step may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressAllow {
    entries: Vec<String>,
}

impl EgressAllow {
    /// An allowlist of entries: `pypi.org` (that host, any port),
    /// `*.pythonhosted.org` (its subdomains), `127.0.0.1:8080` (that address
    /// and port: the only way to reach a loopback or private address).
    pub fn new<I, S>(entries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EgressAllow {
            entries: entries
                .into_iter()
                .map(|e| e.into().trim().to_ascii_lowercase())
                .filter(|e| !e.is_empty())
                .collect(),
        }
    }

    /// The hosts the operator adds for install steps:
    /// `FORQ_EGRESS_ALLOW`, comma-separated (a mirror, a private index).
    pub fn from_env() -> Self {
        Self::new(
            std::env::var("FORQ_EGRESS_ALLOW")
                .unwrap_or_default()
                .split(','),
        )
    }

    /// The entries.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Adds entries.
    pub fn extend<I, S>(&mut self, more: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.entries.extend(Self::new(more).entries);
    }

    /// Whether `host:port` may be reached, and whether the entry that lets
    /// it names an address explicitly (which alone opens a non-public one).
    fn allows(&self, host: &str, port: u16) -> Option<bool> {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let with_port = format!("{host}:{port}");
        self.entries.iter().find_map(|e| {
            if *e == with_port {
                Some(host.parse::<IpAddr>().is_ok())
            } else if *e == host {
                Some(false)
            } else if let Some(suffix) = e.strip_prefix("*.") {
                host.ends_with(&format!(".{suffix}")).then_some(false)
            } else {
                None
            }
        })
    }
}

/// The package registries a stack's installs reach, by the stack's
/// ecosystem name (`python`, `node`, `rust`, `go`, `java`).
pub fn registries(ecosystem: &str) -> &'static [&'static str] {
    match ecosystem {
        "python" => &["pypi.org", "files.pythonhosted.org"],
        "node" => &["registry.npmjs.org", "registry.yarnpkg.com"],
        "rust" => &["crates.io", "index.crates.io", "static.crates.io"],
        "go" => &[
            "proxy.golang.org",
            "sum.golang.org",
            "storage.googleapis.com",
        ],
        "java" => &[
            "repo.maven.apache.org",
            "repo1.maven.org",
            "plugins.gradle.org",
            "services.gradle.org",
        ],
        _ => &[],
    }
}

/// Whether an address is anything but a public unicast one.
fn non_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64 // shared 100.64/10
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xfe00) == 0xfc00 // unique local
                || (v6.segments()[0] & 0xffc0) == 0xfe80 // link local
                || v6.to_ipv4_mapped().is_some_and(|v4| non_public(IpAddr::V4(v4)))
        }
    }
}

/// The proxy of one exec: a listener inside the exec's network namespace,
/// served by forq's runtime until this is dropped (used by the native
/// and docker backends).
#[cfg_attr(not(any(target_os = "linux", feature = "docker")), allow(dead_code))]
pub(crate) struct Served {
    /// The namespace the exec joins (native) or already is in (docker).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the native backend's
    pub(crate) netns: std::fs::File,
    task: tokio::task::JoinHandle<()>,
}

#[cfg_attr(not(any(target_os = "linux", feature = "docker")), allow(dead_code))]
impl Served {
    /// Serves `allow` on `listener` (made inside `netns`).
    pub(crate) fn start(
        netns: std::fs::File,
        listener: std::net::TcpListener,
        allow: &EgressAllow,
    ) -> std::io::Result<Served> {
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        Ok(Served {
            netns,
            task: serve(listener, Arc::new(allow.clone())),
        })
    }

    /// The variables that point package clients at the proxy on the
    /// sandbox's own loopback.
    pub(crate) fn env() -> Vec<(String, String)> {
        proxy_env("127.0.0.1")
    }
}

/// The variables that point package clients at the proxy on `host`.
pub(crate) fn proxy_env(host: &str) -> Vec<(String, String)> {
    {
        let url = format!("http://{host}:{PROXY_PORT}");
        let mut env: Vec<(String, String)> =
            ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
                .into_iter()
                .map(|k| (k.to_owned(), url.clone()))
                .collect();
        env.push(("NO_PROXY".to_owned(), String::new()));
        env.push(("no_proxy".to_owned(), String::new()));
        env
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves proxy connections accepted on `listener` until dropped.
fn serve(listener: TcpListener, allow: Arc<EgressAllow>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let Ok((conn, _)) = listener.accept().await else {
                return;
            };
            let allow = allow.clone();
            tokio::spawn(async move {
                if let Err(e) = handle(conn, &allow).await {
                    tracing::debug!(error = %e, "egress proxy connection ended");
                }
            });
        }
    })
}

async fn handle(mut conn: TcpStream, allow: &EgressAllow) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 4096];
    let end = loop {
        let n = conn.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > MAX_HEAD {
            return refuse(&mut conn, 431, "the request head is too large").await;
        }
    };
    let text = String::from_utf8_lossy(&head[..end]).into_owned();
    let first = text.lines().next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (method, target, version) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or("HTTP/1.1"),
    );
    let (authority, rest_of_head) = if method.eq_ignore_ascii_case("CONNECT") {
        (target.to_owned(), None)
    } else if let Some(after) = target.strip_prefix("http://") {
        let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
        let path = if path.is_empty() { "/" } else { path };
        let rewritten = format!("{method} {path} {version}\r\n{}", &text[first.len() + 2..]);
        (authority.to_owned(), Some(rewritten))
    } else {
        return refuse(
            &mut conn,
            400,
            "forq's egress proxy takes CONNECT or absolute http:// requests",
        )
        .await;
    };
    let default_port = if rest_of_head.is_some() { 80 } else { 443 };
    let (host, port) = split_authority(&authority, default_port);
    let Some(explicit) = allow.allows(&host, port) else {
        tracing::warn!(host, port, "egress refused: not on the allowlist");
        return refuse(
            &mut conn,
            403,
            &format!(
                "forq's egress proxy: {host}:{port} is not on this sandbox's allowlist (the stack's \
                 package registries); the operator may add it (FORQ_EGRESS_ALLOW)"
            ),
        )
        .await;
    };
    let addrs: Vec<SocketAddr> = match tokio::net::lookup_host((host.as_str(), port)).await {
        Ok(a) => a.collect(),
        Err(e) => return refuse(&mut conn, 502, &format!("cannot resolve {host}: {e}")).await,
    };
    let Some(addr) = addrs.into_iter().find(|a| explicit || !non_public(a.ip())) else {
        tracing::warn!(
            host,
            port,
            "egress refused: resolves only to non-public addresses"
        );
        return refuse(
            &mut conn,
            403,
            &format!("forq's egress proxy: {host} resolves to no public address"),
        )
        .await;
    };
    let mut upstream = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) => {
            return refuse(
                &mut conn,
                502,
                &format!("cannot connect to {host}:{port}: {e}"),
            )
            .await
        }
    };
    match rest_of_head {
        None => {
            conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            upstream.write_all(&head[end..]).await?;
        }
        Some(rewritten) => {
            upstream.write_all(rewritten.as_bytes()).await?;
            upstream.write_all(&head[end..]).await?;
        }
    }
    tokio::io::copy_bidirectional(&mut conn, &mut upstream).await?;
    Ok(())
}

fn split_authority(authority: &str, default_port: u16) -> (String, u16) {
    // [v6]:port, host:port, host
    if let Some(rest) = authority.strip_prefix('[') {
        if let Some((h, p)) = rest.split_once("]:") {
            return (h.to_owned(), p.parse().unwrap_or(default_port));
        }
        return (rest.trim_end_matches(']').to_owned(), default_port);
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty() => {
            (h.to_owned(), p.parse().unwrap_or(default_port))
        }
        _ => (authority.to_owned(), default_port),
    }
}

async fn refuse(conn: &mut TcpStream, code: u16, why: &str) -> std::io::Result<()> {
    let reason = match code {
        400 => "Bad Request",
        403 => "Forbidden",
        431 => "Request Header Fields Too Large",
        _ => "Bad Gateway",
    };
    let body = format!("{why}\n");
    let reply = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(reply.as_bytes()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_matches_hosts_suffixes_and_explicit_addresses() {
        let allow = EgressAllow::new(["pypi.org", "*.pythonhosted.org", "127.0.0.1:8080"]);
        assert_eq!(allow.allows("pypi.org", 443), Some(false));
        assert_eq!(allow.allows("PyPI.org", 80), Some(false));
        assert_eq!(allow.allows("files.pythonhosted.org", 443), Some(false));
        assert_eq!(allow.allows("pythonhosted.org.evil.com", 443), None);
        assert_eq!(allow.allows("evilpypi.org", 443), None);
        assert_eq!(allow.allows("127.0.0.1", 8080), Some(true));
        assert_eq!(allow.allows("127.0.0.1", 8081), None);
        assert_eq!(allow.allows("localhost", 8080), None);
    }

    #[test]
    fn non_public_addresses_are_known() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.0.1",
            "169.254.1.1",
            "::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "100.64.0.1",
            "0.0.0.0",
        ] {
            assert!(non_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["151.101.0.223", "2a04:4e42::223"] {
            assert!(!non_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn authorities_split() {
        assert_eq!(
            split_authority("pypi.org:443", 80),
            ("pypi.org".to_owned(), 443)
        );
        assert_eq!(split_authority("pypi.org", 80), ("pypi.org".to_owned(), 80));
        assert_eq!(split_authority("[::1]:8080", 80), ("::1".to_owned(), 8080));
    }
}
