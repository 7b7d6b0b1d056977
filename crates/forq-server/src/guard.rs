//! The guard every request passes: the `Host` the server answers to (DNS
//! rebinding), the token, and no change from another site.

#[allow(clippy::wildcard_imports)] // the server's own types and imports
use crate::*;
use tracing::Instrument;

/// Equal in time whatever the first difference (the token check).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a request comes from another site: its `Origin` names another
/// host than the one it was sent to, or the browser says so.
pub(crate) fn cross_site(headers: &HeaderMap) -> bool {
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "cross-site")
    {
        return true;
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let origin_host = origin.split_once("://").map_or(origin, |(_, rest)| rest);
    origin == "null" || origin_host != host
}

/// The `Host` values a server bound at `addr` answers to: its address
/// (for loopback also `localhost`), with and without the port, and the
/// operator's `extra` names; `None` (any) for an unspecified address with
/// no names given.
pub(crate) fn allowed_hosts(addr: SocketAddr, extra: &[String]) -> Option<Arc<[String]>> {
    let ip = addr.ip();
    if ip.is_unspecified() && extra.is_empty() {
        return None;
    }
    let port = addr.port();
    let mut names: Vec<String> = extra.iter().map(|h| h.to_ascii_lowercase()).collect();
    if !ip.is_unspecified() {
        names.push(match ip {
            std::net::IpAddr::V4(v4) => v4.to_string(),
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        });
    }
    if ip.is_loopback() {
        names.extend(["localhost", "127.0.0.1", "[::1]"].map(str::to_owned));
    }
    let with_ports: Vec<String> = names.iter().map(|n| format!("{n}:{port}")).collect();
    names.extend(with_ports);
    Some(names.into())
}

/// Whether `request`'s `Host` is one this server answers to.
pub(crate) fn host_taken(app: &App, headers: &HeaderMap) -> bool {
    let Some(hosts) = &app.hosts else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    hosts.contains(&host)
}

/// The `Host` this server answers to, the token, and no change from
/// another site.
pub(crate) async fn guard(State(app): State<App>, request: Request, next: Next) -> Response {
    if !host_taken(&app, request.headers()) {
        return ApiError(
            StatusCode::MISDIRECTED_REQUEST,
            "this server does not answer to that Host (a page that rebinds its name to this \
             address is refused); name the host with forq serve --host NAME"
                .to_owned(),
        )
        .into_response();
    }
    // GitHub signs its deliveries instead: it cannot send the token. The
    // dashboard's page and assets hold no data: the page asks for the
    // token and sends it with every call.
    let path = request.uri().path();
    // A preview's URL is its capability (128 random bits, handed out only
    // to a request that carried the token): a browser opens it as is.
    let open = path == "/webhooks/github"
        || path == "/"
        || path.starts_with("/assets/")
        || path.starts_with("/preview/");
    if let (Some(token), false) = (&app.token, open) {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !same(given.as_bytes(), token.as_bytes()) {
            return ApiError(
                StatusCode::UNAUTHORIZED,
                "this server needs its token: send `Authorization: Bearer <token>`".to_owned(),
            )
            .into_response();
        }
    }
    if request.method() != Method::GET
        && request.method() != Method::HEAD
        && cross_site(request.headers())
    {
        return ApiError(
            StatusCode::FORBIDDEN,
            "a change from another site is refused".to_owned(),
        )
        .into_response();
    }
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        path = %request.uri().path()
    );
    let response = next.run(request).instrument(span.clone()).await;
    span.in_scope(|| tracing::debug!(status = response.status().as_u16(), "answered"));
    response
}
