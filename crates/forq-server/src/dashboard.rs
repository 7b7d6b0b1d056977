//! The dashboard: one page and its script and styles, compiled into the
//! binary so it works offline. Plain HTML, CSS and JavaScript with no build
//! step; everything it shows it reads from the JSON API and the streams.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/app.js");
const STYLES: &str = include_str!("../assets/app.css");

/// `GET /`: the page.
pub(crate) async fn index() -> Response {
    serve(INDEX, "text/html; charset=utf-8")
}

/// `GET /assets/{file}`: its script and styles.
pub(crate) async fn asset(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "app.js" => serve(SCRIPT, "text/javascript; charset=utf-8"),
        "app.css" => serve(STYLES, "text/css; charset=utf-8"),
        _ => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}

fn serve(body: &'static str, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}
