//! Previews: a run's fix served through a URL of its own, then stopped.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_serves_the_fix_through_its_own_url_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let Some((store, pipeline)) = pipeline_in(dir.path()).await else {
        return;
    };
    let control = Control::new(store.clone()).actions(forq_server::Actions::new(pipeline));
    let previews = control.previews();
    let mut options = loopback();
    options.preview_idle = Duration::from_secs(2);
    let (addr, task) = spawn(control, options).await;
    let url = format!("http://{addr}");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let repo = calc_app(dir.path());
    let queued: Value = client
        .post(format!("{url}/api/queue"))
        .json(&json!({"text": "# add() subtracts\n\nadd(2, 3) returns -1.", "repo": repo, "action": "fix"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = queued["runs"][0]["id"].as_str().unwrap().to_owned();
    // Before its patch, there is nothing to preview.
    let early = client.post(format!("{url}/api/runs/{id}/preview")).send();
    assert_eq!(early.await.unwrap().status().as_u16(), 409);
    let events = sse(&format!("{url}/api/runs/{id}/stream"), None, 100_000).await;
    let last = events.iter().rev().find(|e| e.1 == "state").unwrap();
    assert_eq!(last.2["data"]["to"], "patch_ready", "{events:?}");

    // The fix, running: the page shows 5, not -1.
    let start = || async {
        let made = client
            .post(format!("{url}/api/runs/{id}/preview"))
            .send()
            .await
            .unwrap();
        assert_eq!(made.status().as_u16(), 201);
        let made: Value = made.json().await.unwrap();
        made["url"].as_str().unwrap().to_owned()
    };
    let page_url = start().await;
    assert!(page_url.starts_with("/preview/") && page_url.ends_with('/'));
    let key = page_url
        .trim_start_matches("/preview/")
        .trim_end_matches('/');
    assert_eq!(key.len(), 32, "128 random bits: {key}");
    let page = client
        .get(format!("{url}{page_url}about?x=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200);
    its_page_runs_in_an_opaque_origin_of_its_own(&client, &url, &id, page.headers()).await;
    let page = page.text().await.unwrap();
    assert!(page.contains("2 + 3 = 5"), "{page}");
    assert!(
        page.contains("<p>/about?x=1</p>"),
        "path and query relayed: {page}"
    );
    let bare = client
        .get(format!("{url}/preview/{key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status().as_u16(), 308);
    // Nothing of it is on the host's network.
    assert!(tokio::net::TcpStream::connect("127.0.0.1:8000")
        .await
        .is_err());
    let (_, listed) = get_json(&format!("{url}/api/previews")).await;
    assert_eq!(listed[0]["run"], json!(id));
    assert_eq!(listed[0]["port"], 8000);
    // Stopped on request: its URL is gone.
    let stopped = client
        .delete(format!("{url}/api/previews/{key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(stopped.status().as_u16(), 200);
    let after = client.get(format!("{url}{page_url}")).send().await.unwrap();
    assert_eq!(after.status().as_u16(), 404);

    // Stopped when idle: unused for longer than the server's limit.
    let idle_url = start().await;
    stopped_when_idle(&client, &url, &idle_url).await;

    // Stopped with the server (what `forq serve` does on its way out).
    let last_url = start().await;
    previews.stop_all().await;
    let after = client.get(format!("{url}{last_url}")).send().await.unwrap();
    assert_eq!(after.status().as_u16(), 404);
    task.abort();
}

/// Attack (forq's adversarial corpus, SECURITY.md): the repository's page,
/// relayed on the dashboard's host, calls the API with the dashboard's
/// origin, plants cookies, claims a service worker's scope, or clears the
/// dashboard's storage. It runs in an opaque origin of its own, those
/// headers do not pass, and what its scripts send (`Origin: null`) is
/// refused.
async fn its_page_runs_in_an_opaque_origin_of_its_own(
    client: &reqwest::Client,
    url: &str,
    id: &str,
    headers: &reqwest::header::HeaderMap,
) {
    for dropped in ["set-cookie", "service-worker-allowed", "clear-site-data"] {
        assert!(
            headers.get(dropped).is_none(),
            "{dropped} passed: {headers:?}"
        );
    }
    let csp = headers
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        csp.starts_with("sandbox ") && !csp.contains("allow-same-origin"),
        "{csp}"
    );
    // What its scripts send carries the opaque origin (`null`): a change
    // is refused.
    let from_page = client
        .post(format!("{url}/api/runs/{id}/abort"))
        .header("Origin", "null")
        .send()
        .await
        .unwrap();
    assert_eq!(from_page.status().as_u16(), 403);
}

/// A preview used once, then left: stopped when unused for longer than the
/// server's limit, its URL gone.
async fn stopped_when_idle(client: &reqwest::Client, url: &str, idle_url: &str) {
    assert_eq!(
        client
            .get(format!("{url}{idle_url}"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    let mut gone = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (_, listed) = get_json(&format!("{url}/api/previews")).await;
        if listed.as_array().unwrap().is_empty() {
            gone = true;
            break;
        }
    }
    assert!(gone, "an idle preview was not stopped");
    let after = client.get(format!("{url}{idle_url}")).send().await.unwrap();
    assert_eq!(after.status().as_u16(), 404);
}
