//! The model relay of external agents: a coding-agent program in a sandbox
//! holds a dummy key and talks to `http://127.0.0.1:PORT` inside its own
//! network namespace, where forq listens; forq forwards each request to the
//! real model endpoint with the real key in place of the dummy one. No real
//! key enters a sandbox, and the sandbox needs no way out at all: the
//! model's host is on no allowlist, so the tests the program runs cannot
//! reach it (or anything) either.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use forq_sandbox::ServiceNetwork;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};

use crate::provider::ApiKey;

/// Headers never passed on: the connection's own, and the credentials
/// the relay replaces.
const DROPPED: [&str; 9] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "x-api-key",
    "authorization",
];

/// The relay of one run: stops when dropped.
#[derive(Debug)]
pub(crate) struct KeyRelay {
    /// Where the program sends its requests, inside the sandbox.
    pub(crate) base_url: String,
    /// The key the program holds: worth nothing outside this relay.
    pub(crate) dummy: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for KeyRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How the real key travels upstream.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyHeader {
    /// `x-api-key: KEY` (Anthropic).
    XApiKey,
    /// `Authorization: Bearer KEY` (OpenAI).
    Bearer,
}

struct Upstream {
    client: reqwest::Client,
    /// `scheme://host[:port]` of the real endpoint.
    origin: String,
    key: ApiKey,
    header: KeyHeader,
    dummy: String,
}

impl KeyRelay {
    /// Listens in `net` and forwards to `upstream` (the real base URL: its
    /// path is kept, so the program's base is this relay plus that path).
    pub(crate) async fn start(
        net: &ServiceNetwork,
        upstream: &str,
        key: ApiKey,
        header: KeyHeader,
    ) -> std::io::Result<KeyRelay> {
        let (origin, path) = split_url(upstream);
        let listener = net.listen(0).await?;
        let port = listener.local_addr()?.port();
        let dummy = format!("forq-relay-{}", random_hex()?);
        let upstream = Arc::new(Upstream {
            client: reqwest::Client::builder()
                .build()
                .map_err(std::io::Error::other)?,
            origin,
            key,
            header,
            dummy: dummy.clone(),
        });
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((conn, _)) = accepted else { return };
                        let upstream = upstream.clone();
                        connections.spawn(async move {
                            let service = hyper::service::service_fn(move |req| {
                                let upstream = upstream.clone();
                                async move { Ok::<_, Infallible>(forward(&upstream, req).await) }
                            });
                            let io = hyper_util::rt::TokioIo::new(conn);
                            if let Err(e) = hyper::server::conn::http1::Builder::new()
                                .serve_connection(io, service)
                                .await
                            {
                                tracing::debug!(error = %e, "model relay connection ended");
                            }
                        });
                    }
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(KeyRelay {
            base_url: format!("http://127.0.0.1:{port}{path}"),
            dummy,
            task,
        })
    }
}

type RelayBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

fn answer(status: StatusCode, text: &str) -> Response<RelayBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(
            serde_json::json!({"error": {"message": text}}).to_string(),
        ))
        .map_err(|never| match never {})
        .boxed(),
    );
    *response.status_mut() = status;
    response
}

/// One request, forwarded with the real key; the answer streams back as it
/// comes (the programs read server-sent events).
async fn forward(upstream: &Upstream, req: Request<Incoming>) -> Response<RelayBody> {
    let (parts, body) = req.into_parts();
    // Only the program this relay serves holds the dummy key.
    let given = parts
        .headers
        .get("x-api-key")
        .or_else(|| parts.headers.get("authorization"))
        .and_then(|v| v.to_str().ok())
        .map(|v| v.strip_prefix("Bearer ").unwrap_or(v));
    if given != Some(upstream.dummy.as_str()) {
        return answer(StatusCode::UNAUTHORIZED, "forq's model relay: unknown key");
    }
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return answer(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the request: {e}"),
            )
        }
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", hyper::http::uri::PathAndQuery::as_str);
    let url = format!("{}{path}", upstream.origin);
    let mut out = upstream.client.request(parts.method.clone(), &url);
    for (name, value) in &parts.headers {
        if !DROPPED.contains(&name.as_str()) {
            out = out.header(name, value);
        }
    }
    out = match upstream.header {
        KeyHeader::XApiKey => out.header("x-api-key", upstream.key.expose()),
        KeyHeader::Bearer => out.bearer_auth(upstream.key.expose()),
    };
    let reply = match out.body(body).send().await {
        Ok(r) => r,
        Err(e) => {
            return answer(
                StatusCode::BAD_GATEWAY,
                &upstream
                    .key
                    .redact(&format!("forq's model relay cannot reach the model: {e}")),
            )
        }
    };
    let mut response = Response::builder().status(reply.status().as_u16());
    for (name, value) in reply.headers() {
        if !DROPPED.contains(&name.as_str()) {
            response = response.header(name.as_str(), value.as_bytes());
        }
    }
    let chunks = futures_util::stream::unfold(Some(reply), |reply| async move {
        let mut reply = reply?;
        match reply.chunk().await {
            Ok(Some(bytes)) => Some((Ok(Frame::data(bytes)), Some(reply))),
            Ok(None) => None,
            Err(e) => Some((Err(std::io::Error::other(e)), None)),
        }
    });
    response
        .body(BodyExt::boxed(StreamBody::new(chunks)))
        .unwrap_or_else(|e| answer(StatusCode::BAD_GATEWAY, &e.to_string()))
}

/// `scheme://host[:port]` and the path (without a trailing `/`) of `url`.
fn split_url(url: &str) -> (String, String) {
    let url = url.trim_end_matches('/');
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => (url[..after + i].to_owned(), url[after + i..].to_owned()),
        None => (url.to_owned(), String::new()),
    }
}

fn random_hex() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_origin_and_path() {
        assert_eq!(
            split_url("https://api.openai.com/v1"),
            ("https://api.openai.com".to_owned(), "/v1".to_owned())
        );
        assert_eq!(
            split_url("https://api.anthropic.com/"),
            ("https://api.anthropic.com".to_owned(), String::new())
        );
        assert_eq!(
            split_url("http://127.0.0.1:8080/base/v1/"),
            ("http://127.0.0.1:8080".to_owned(), "/base/v1".to_owned())
        );
    }
}
