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

/// How long a tunnel's client may take to say whom it talks to.
const OPENING_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The ports a host named without one may be reached on.
const WEB_PORTS: [u16; 2] = [443, 80];

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
    /// An allowlist of entries: `pypi.org` (that host, on ports 443 and
    /// 80), `*.pythonhosted.org` (its subdomains, on the same ports),
    /// `mirror.example:8443` (that host on that port), `127.0.0.1:8080`
    /// (that address and port: the only way to reach a loopback or private
    /// address).
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
            } else if !WEB_PORTS.contains(&port) {
                None
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
        // Not the whole storage.googleapis.com (any bucket of anyone's):
        // the module proxy serves modules itself.
        "go" => &["proxy.golang.org", "sum.golang.org"],
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

/// Serves proxy connections accepted on `listener` until dropped. The
/// connections are the accept loop's own (a `JoinSet`), so aborting it
/// ends every tunnel it opened: none outlives the exec it served.
fn serve(listener: TcpListener, allow: Arc<EgressAllow>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((conn, _)) = accepted else {
                        return;
                    };
                    let allow = allow.clone();
                    connections.spawn(async move {
                        if let Err(e) = handle(conn, &allow).await {
                            tracing::debug!(error = %e, "egress proxy connection ended");
                        }
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    })
}

/// A request head as the proxy takes it.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    /// `CONNECT host:port` (a tunnel) rather than an absolute `http://`
    /// request.
    tunnel: bool,
    host: String,
    port: u16,
    /// For an absolute request: the head to send upstream, in origin form.
    forward: Option<Vec<u8>>,
}

/// Reads a request head (everything up to its blank line, which `head`
/// ends with). Never panics, whatever the bytes: the request line must be
/// printable ASCII ending in CRLF with exactly three parts; an absolute
/// request must carry a `Host` naming the host it asks for.
fn parse_head(head: &[u8]) -> Result<Head, &'static str> {
    const MALFORMED: &str =
        "the request line is not `METHOD TARGET HTTP/x` in ASCII ending in CRLF";
    let line_end = head
        .windows(2)
        .position(|w| w == b"\r\n")
        .ok_or(MALFORMED)?;
    let line = &head[..line_end];
    if !line.iter().all(|b| (0x20..0x7f).contains(b)) {
        return Err(MALFORMED);
    }
    let line = std::str::from_utf8(line).map_err(|_| MALFORMED)?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(MALFORMED);
    };
    if method.is_empty() || !version.starts_with("HTTP/") {
        return Err(MALFORMED);
    }
    let rest = &head[line_end + 2..];
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) =
            split_authority(target, 443).ok_or("the CONNECT target is not host:port")?;
        return Ok(Head {
            tunnel: true,
            host,
            port,
            forward: None,
        });
    }
    let Some(after) = target.strip_prefix("http://") else {
        return Err("forq's egress proxy takes CONNECT or absolute http:// requests");
    };
    let (authority, path) = after.split_at(after.find('/').unwrap_or(after.len()));
    let path = if path.is_empty() { "/" } else { path };
    let (host, port) = split_authority(authority, 80).ok_or("the URL's host is malformed")?;
    match host_header(rest) {
        Some(named) if named.eq_ignore_ascii_case(&host) => {}
        Some(_) => return Err("the Host header names another host than the URL (domain fronting)"),
        None => return Err("the request has no Host header"),
    }
    let mut forward = format!("{method} {path} {version}\r\n").into_bytes();
    forward.extend_from_slice(rest);
    Ok(Head {
        tunnel: false,
        host,
        port,
        forward: Some(forward),
    })
}

/// The host (without its port) of the `Host` header among `headers`
/// (header lines, CRLF-separated), when there is exactly one and it is
/// ASCII.
fn host_header(headers: &[u8]) -> Option<String> {
    let mut found = None;
    for line in headers.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if !line[..colon].eq_ignore_ascii_case(b"host") {
            continue;
        }
        let value = std::str::from_utf8(&line[colon + 1..]).ok()?.trim();
        if found.is_some() || !value.is_ascii() {
            return None;
        }
        found = Some(split_authority(value, 80)?.0);
    }
    found
}

/// What a tunnel's client says first.
#[derive(Debug, PartialEq, Eq)]
enum Opening {
    /// A TLS ClientHello, with the server name it asks for.
    Tls(Option<String>),
    /// Plain HTTP, with its `Host`.
    Http(Option<String>),
    /// Not yet enough bytes to tell.
    More,
    /// Neither.
    Other,
}

/// Reads the start of a tunnel. The ClientHello's server name is parsed by
/// hand (record, handshake, extensions: about forty lines of bounds-checked
/// reads): a TLS library would pull a whole stack in for one field, and the
/// proxy never terminates TLS.
fn opening(bytes: &[u8]) -> Opening {
    match bytes.first() {
        None => Opening::More,
        Some(0x16) => {
            let Some(len) = bytes
                .get(3..5)
                .map(|l| usize::from(u16::from_be_bytes([l[0], l[1]])))
            else {
                return Opening::More;
            };
            match bytes.get(5..5 + len) {
                Some(record) => Opening::Tls(server_name(record)),
                None => Opening::More,
            }
        }
        Some(b) if b.is_ascii_uppercase() => {
            match bytes.windows(4).position(|w| w == b"\r\n\r\n") {
                Some(end) => {
                    let headers = bytes[..end]
                        .windows(2)
                        .position(|w| w == b"\r\n")
                        .map_or(&[][..], |i| &bytes[i + 2..end]);
                    Opening::Http(host_header(headers))
                }
                None => Opening::More,
            }
        }
        Some(_) => Opening::Other,
    }
}

/// The `server_name` of a TLS handshake record holding a ClientHello.
fn server_name(record: &[u8]) -> Option<String> {
    struct Reader<'a>(&'a [u8]);
    impl<'a> Reader<'a> {
        fn take(&mut self, n: usize) -> Option<&'a [u8]> {
            let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
            self.0 = rest;
            Some(head)
        }
        fn u8(&mut self) -> Option<usize> {
            self.take(1).map(|b| usize::from(b[0]))
        }
        fn u16(&mut self) -> Option<usize> {
            self.take(2)
                .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        }
        fn vec8(&mut self) -> Option<&'a [u8]> {
            let n = self.u8()?;
            self.take(n)
        }
        fn vec16(&mut self) -> Option<&'a [u8]> {
            let n = self.u16()?;
            self.take(n)
        }
    }
    let mut r = Reader(record);
    if r.u8()? != 1 {
        return None; // not a ClientHello
    }
    let len = r.take(3)?;
    let len = usize::from(len[0]) << 16 | usize::from(len[1]) << 8 | usize::from(len[2]);
    let mut hello = Reader(r.take(len)?);
    hello.take(2 + 32)?; // version, random
    hello.vec8()?; // session id
    hello.vec16()?; // cipher suites
    hello.vec8()?; // compression methods
    let mut extensions = Reader(hello.vec16()?);
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vec16()?;
        if kind != 0 {
            continue;
        }
        let mut list = Reader(Reader(data).vec16()?);
        while !list.0.is_empty() {
            let name_type = list.u8()?;
            let name = list.vec16()?;
            if name_type == 0 {
                return std::str::from_utf8(name).ok().map(str::to_ascii_lowercase);
            }
        }
    }
    None
}

/// Whether a tunnel's opening goes to `host`: a TLS server name, or a
/// plain request's `Host`, naming it (a tunnel to an address may carry no
/// name). Anything else is domain fronting, or not a client of a registry.
fn opening_matches(opening: &Opening, host: &str) -> bool {
    let is_address = host.parse::<IpAddr>().is_ok();
    match opening {
        Opening::Tls(Some(name)) | Opening::Http(Some(name)) => name.eq_ignore_ascii_case(host),
        Opening::Tls(None) => is_address,
        Opening::Http(None) | Opening::More | Opening::Other => false,
    }
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
    let request = match parse_head(&head[..end]) {
        Ok(r) => r,
        Err(why) => return refuse(&mut conn, 400, why).await,
    };
    let (host, port) = (request.host.clone(), request.port);
    let Some(explicit) = allow.allows(&host, port) else {
        tracing::warn!(host, port, "egress refused: not on the allowlist");
        return refuse(
            &mut conn,
            403,
            &format!(
                "forq's egress proxy: {host}:{port} is not on this sandbox's allowlist (the stack's \
                 package registries, on ports 443 and 80); the operator may add it (FORQ_EGRESS_ALLOW)"
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
    // A tunnel's first bytes must name the host it was opened to (the TLS
    // server name, or a plain request's Host): read them before anything
    // goes upstream.
    let mut first = head[end..].to_vec();
    if request.tunnel {
        conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
        let opened = loop {
            match opening(&first) {
                Opening::More if first.len() <= MAX_HEAD + 5 => {}
                other => break other,
            }
            let n = match tokio::time::timeout(OPENING_WAIT, conn.read(&mut buf)).await {
                Ok(read) => read?,
                Err(_) => 0,
            };
            if n == 0 {
                break Opening::More;
            }
            first.extend_from_slice(&buf[..n]);
        };
        if !opening_matches(&opened, &host) {
            tracing::warn!(host, port, opening = ?opened, "egress refused: the tunnel's first bytes name another host");
            return Ok(());
        }
    }
    let mut upstream = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(e) if request.tunnel => return Err(e),
        Err(e) => {
            return refuse(
                &mut conn,
                502,
                &format!("cannot connect to {host}:{port}: {e}"),
            )
            .await
        }
    };
    if let Some(forward) = &request.forward {
        upstream.write_all(forward).await?;
    }
    upstream.write_all(&first).await?;
    tokio::io::copy_bidirectional(&mut conn, &mut upstream).await?;
    Ok(())
}

/// `[v6]:port`, `host:port` or `host` (the default port); `None` when it is
/// empty, names a port that is not a number, or holds what no host name
/// does.
fn split_authority(authority: &str, default_port: u16) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        match rest.split_once(']') {
            Some((h, "")) => (h, default_port),
            Some((h, p)) => (h, p.strip_prefix(':')?.parse().ok()?),
            None => return None,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().ok()?),
            None => (authority, default_port),
        }
    };
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':');
    if host.is_empty() || !host.chars().all(fine) {
        return None;
    }
    Some((host.to_ascii_lowercase(), port))
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
        // A name is reached on the web's ports only, unless given with one.
        assert_eq!(allow.allows("pypi.org", 22), None);
        assert_eq!(allow.allows("files.pythonhosted.org", 6379), None);
        let mirror = EgressAllow::new(["mirror.example:8443"]);
        assert_eq!(mirror.allows("mirror.example", 8443), Some(false));
        assert_eq!(mirror.allows("mirror.example", 443), None);
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
        let ok = |a: &str, h: &str, p: u16| {
            assert_eq!(split_authority(a, 80), Some((h.to_owned(), p)), "{a}")
        };
        ok("pypi.org:443", "pypi.org", 443);
        ok("PyPI.org", "pypi.org", 80);
        ok("[::1]:8080", "::1", 8080);
        ok("[::1]", "::1", 80);
        for bad in [
            "",
            "pypi.org:",
            "pypi.org:x",
            "pypi.org:99999",
            "a b",
            "[::1",
            "[::1]x",
            "é.org",
        ] {
            assert_eq!(split_authority(bad, 80), None, "{bad:?}");
        }
    }

    /// Attack (forq's adversarial corpus, SECURITY.md): a request line with
    /// a bare LF and non-ASCII bytes panicked the connection's task. It is
    /// a 400 now, as is every malformed head.
    #[test]
    fn malformed_heads_are_refused_not_panicked_on() {
        for head in [
            &b"GET http://pypi.org/ HTTP/1.1\n\xc3\xa9\xc3\xa9: x\r\n\r\n"[..],
            b"GET http://pypi.org/\xc3\xa9 HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
            b"CONNECT\r\n\r\n",
            b"CONNECT pypi.org:443 HTTP/1.1 extra\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
            b"\r\n\r\n",
        ] {
            assert!(
                parse_head(head).is_err(),
                "{:?}",
                String::from_utf8_lossy(head)
            );
        }
        let ok = parse_head(
            b"GET http://pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\nX: \xff\r\n\r\n",
        )
        .unwrap();
        assert_eq!(
            (ok.tunnel, ok.host.as_str(), ok.port),
            (false, "pypi.org", 80)
        );
        assert_eq!(
            ok.forward.unwrap(),
            b"GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\nX: \xff\r\n\r\n"
        );
        let tunnel = parse_head(b"CONNECT pypi.org:443 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((tunnel.tunnel, tunnel.port), (true, 443));
    }

    /// Attack: domain fronting, the Host of a plain request naming another
    /// host than its URL.
    #[test]
    fn a_host_header_must_name_the_urls_host() {
        let fronted = b"GET http://pypi.org/ HTTP/1.1\r\nHost: evil.example\r\n\r\n";
        assert!(parse_head(fronted).is_err());
        let twice =
            b"GET http://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\nHost: evil.example\r\n\r\n";
        assert!(parse_head(twice).is_err());
    }

    /// A ClientHello with `name` as its server name (or none), as a TLS
    /// client writes it.
    pub(super) fn client_hello(name: Option<&str>) -> Vec<u8> {
        let mut ext = Vec::new();
        if let Some(name) = name {
            let n = name.len() as u16;
            ext.extend_from_slice(&[0, 0]);
            ext.extend_from_slice(&(n + 5).to_be_bytes());
            ext.extend_from_slice(&(n + 3).to_be_bytes());
            ext.push(0);
            ext.extend_from_slice(&n.to_be_bytes());
            ext.extend_from_slice(name.as_bytes());
        }
        // An unrelated extension (supported_versions) before nothing.
        ext.extend_from_slice(&[0, 43, 0, 3, 2, 3, 4]);
        let mut hello = vec![3, 3];
        hello.extend_from_slice(&[7; 32]);
        hello.push(0);
        hello.extend_from_slice(&[0, 2, 0x13, 0x01]);
        hello.extend_from_slice(&[1, 0]);
        hello.extend_from_slice(&(ext.len() as u16).to_be_bytes());
        hello.extend_from_slice(&ext);
        let mut handshake = vec![1];
        handshake.extend_from_slice(&(hello.len() as u32).to_be_bytes()[1..]);
        handshake.extend_from_slice(&hello);
        let mut record = vec![0x16, 3, 1];
        record.extend_from_slice(&(handshake.len() as u16).to_be_bytes());
        record.extend_from_slice(&handshake);
        record
    }

    /// Attack: a tunnel opened to an allowed host whose TLS server name (or
    /// plain Host) is another one.
    #[test]
    fn a_tunnel_must_speak_to_the_host_it_was_opened_to() {
        let hello = client_hello(Some("PyPI.org"));
        assert_eq!(opening(&hello), Opening::Tls(Some("pypi.org".to_owned())));
        assert_eq!(opening(&hello[..20]), Opening::More);
        assert!(opening_matches(&opening(&hello), "pypi.org"));
        assert!(!opening_matches(
            &opening(&client_hello(Some("evil.example"))),
            "pypi.org"
        ));
        assert!(!opening_matches(&opening(&client_hello(None)), "pypi.org"));
        assert!(opening_matches(
            &opening(&client_hello(None)),
            "151.101.0.223"
        ));
        let http = b"GET / HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n";
        assert!(opening_matches(&opening(http), "pypi.org"));
        assert!(!opening_matches(&opening(b"\x00\x01garbage"), "pypi.org"));
    }

    /// A proxy on loopback in front of an upstream that records what it
    /// is sent; the upstream's address is the only one allowed.
    async fn proxy_and_upstream() -> (
        SocketAddr,
        tokio::task::JoinHandle<()>,
        SocketAddr,
        tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
    ) {
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up = upstream.local_addr().unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut c, _)) = upstream.accept().await {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    while let Ok(n) = c.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let _ = tx.send(buf[..n].to_vec());
                        let _ = c.write_all(b"pong").await;
                    }
                });
            }
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = listener.local_addr().unwrap();
        let task = serve(listener, Arc::new(EgressAllow::new([up.to_string()])));
        (proxy, task, up, rx)
    }

    async fn connect(proxy: SocketAddr, up: SocketAddr) -> TcpStream {
        let mut c = TcpStream::connect(proxy).await.unwrap();
        c.write_all(format!("CONNECT {up} HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut buf = [0u8; 39];
        c.read_exact(&mut buf).await.unwrap();
        assert!(
            buf.starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&buf)
        );
        c
    }

    /// Attack: a tunnel whose TLS server name is not the host it was opened
    /// to reaches nothing; one that names it (or none, to an address) goes
    /// through, and ends when the proxy that served it is dropped.
    #[tokio::test]
    async fn tunnels_name_their_host_and_end_with_their_proxy() {
        let (proxy, task, up, mut seen) = proxy_and_upstream().await;
        let mut fronted = connect(proxy, up).await;
        fronted
            .write_all(&client_hello(Some("evil.example")))
            .await
            .unwrap();
        let mut buf = [0u8; 16];
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), fronted.read(&mut buf))
            .await
            .unwrap()
            .unwrap_or(0);
        assert_eq!(n, 0, "the fronted tunnel is closed");
        assert!(seen.try_recv().is_err(), "nothing reached the upstream");

        let mut tunnel = connect(proxy, up).await;
        tunnel.write_all(&client_hello(None)).await.unwrap();
        tunnel.read_exact(&mut buf[..4]).await.unwrap();
        assert_eq!(&buf[..4], b"pong");
        assert_eq!(seen.recv().await.unwrap(), client_hello(None));
        task.abort();
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), tunnel.read(&mut buf))
            .await
            .expect("the tunnel ended with its proxy")
            .unwrap_or(0);
        assert_eq!(n, 0);
    }

    proptest::proptest! {
        /// The head parser and the opening reader never panic.
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
            let _ = parse_head(&bytes);
            let _ = opening(&bytes);
            let _ = server_name(&bytes);
            let mut hello = client_hello(Some("pypi.org"));
            let at = bytes.len() % hello.len();
            hello.truncate(at);
            hello.extend_from_slice(&bytes);
            let _ = opening(&hello);
        }
    }
}
