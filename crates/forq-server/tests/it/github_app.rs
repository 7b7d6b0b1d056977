//! forq as a GitHub App against the loopback hub: JWTs, installation
//! tokens bought, refreshed and scoped; the installation webhooks keep the
//! repositories forq may act on, and a trigger elsewhere is refused.

use super::hub::{app_keys, deliver, Hub};
use super::*;
use forq_app::github::{AppKey, Github, GithubError};

fn issue(repo: &str, number: u64, association: &str) -> Value {
    json!({"number": number, "title": format!("issue {number}"), "body": "clamp(5, 0, 3) gives 5",
        "html_url": format!("https://github.com/{repo}/issues/{number}"), "state": "open",
        "labels": [], "user": {"login": "someone"}, "author_association": association})
}

/// The hub with App 42 installed (installation 7) on `o/r`, which has
/// issues 1 to 5 by its owner.
async fn installed_with_five_issues(keys: &super::hub::AppKeys) -> Hub {
    let hub = Hub::start(42, &keys.public_pem, &[(7, &["o/r"])]).await;
    for n in 1..=5 {
        hub.lock()
            .issues
            .insert(("o/r".to_owned(), n), issue("o/r", n, "OWNER"));
    }
    hub
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_buys_installation_tokens_refreshes_them_and_stays_where_installed() {
    let keys = app_keys().await;
    let hub = installed_with_five_issues(&keys).await;
    hub.lock().limit_next_list = true;
    let gh = Github::app(&hub.url, AppKey::from_file(42, &keys.file).unwrap());
    // Every page, after waiting out a spent rate limit.
    let listed = gh.list_issues("o/r", None, false, None).await.unwrap();
    assert_eq!(
        listed.iter().map(|i| i.number).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert_eq!(hub.calls("GET", "/installation").len(), 1);
    assert_eq!(hub.calls("POST", "/access_tokens").len(), 1);
    let lists = hub.calls("GET", "/repos/o/r/issues");
    assert_eq!(lists.len(), 4, "limited once, then three pages: {lists:?}");
    assert!(
        lists.iter().all(|c| c.who == "token:7:r"),
        "the repository's calls carry the installation's token scoped to it, never the JWT: {lists:?}"
    );
    // A token GitHub stops taking (expired early, revoked) is bought again
    // once, and the call goes through.
    hub.revoke_tokens();
    hub.lock().token_ttl = Duration::from_millis(301_500);
    assert_eq!(gh.issue("o/r", 3).await.unwrap().number, 3);
    assert_eq!(hub.calls("POST", "/access_tokens").len(), 2);
    let refused = hub.lock().calls.iter().filter(|c| c.status == 401).count();
    assert_eq!(refused, 1);
    // A token about to expire is bought again before GitHub refuses it:
    // this one had five minutes and a second and a half to live.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(gh.issue("o/r", 4).await.unwrap().number, 4);
    assert_eq!(hub.calls("POST", "/access_tokens").len(), 3);
    let refused = hub.lock().calls.iter().filter(|c| c.status == 401).count();
    assert_eq!(refused, 1, "no refusal before the refresh");
    // Nowhere the App is not installed.
    let err = gh.issue("x/other", 1).await.unwrap_err();
    assert!(
        matches!(&err, GithubError::NotInstalled { app: 42, repo } if repo == "x/other"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("not installed on x/other"),
        "{err}"
    );
    // The key is never printed.
    let shown = format!("{gh:?} {:?}", AppKey::from_file(42, &keys.file).unwrap());
    assert!(
        shown.contains("app 42") && !shown.contains("PRIVATE"),
        "{shown}"
    );
    let not_pem = keys.file.with_extension("txt");
    std::fs::write(&not_pem, "not a key at all").unwrap();
    let err = AppKey::from_file(42, &not_pem).unwrap_err().to_string();
    assert!(
        err.contains(&not_pem.display().to_string()) && !err.contains("not a key at all"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installation_webhooks_say_where_an_app_may_act() {
    let keys = app_keys().await;
    let hub = Hub::start(42, &keys.public_pem, &[(7, &["o/r"])]).await;
    hub.lock()
        .issues
        .insert(("x/other".to_owned(), 5), issue("x/other", 5, "OWNER"));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let store = Arc::new(Store::open(&state.join("forq.db")).unwrap());
    let mut host = forq_sandbox::HostOptions::default();
    host.state_dir = Some(dir.path().join("sandboxes"));
    let backend = Arc::new(forq_sandbox::HostBackend::open(host).unwrap());
    let pipeline = forq_app::pipeline::Pipeline::new(store.clone(), &state, backend);
    let gh = Github::app(&hub.url, AppKey::from_file(42, &keys.file).unwrap());
    let control = Control::new(store.clone())
        .actions(forq_server::Actions::new(pipeline))
        .github(gh)
        .webhook_secret("hook-secret");
    let (addr, task) = spawn(control, loopback()).await;
    // At start the server lists what the App's installations hold.
    let mut waited = 0;
    while store.installed_repos().unwrap().is_empty() {
        assert!(waited < 100, "the installations were never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert_eq!(store.installed_repos().unwrap(), [("o/r".to_owned(), 7)]);
    let hook = format!("http://{addr}/webhooks/github");
    let deliver = |event: &'static str, body: Value| {
        let hook = hook.clone();
        async move { deliver(&hook, event, body).await }
    };
    let other = json!({"full_name": "x/other", "clone_url": "file:///nonexistent/x/other.git", "default_branch": "main"});
    let opened = |action: &str| {
        json!({"action": action, "repository": other, "installation": {"id": 7},
            "issue": issue("x/other", 5, "OWNER"), "label": {"name": action}})
    };
    let (status, reply) = deliver("issues", opened("opened")).await;
    assert_eq!(status, 200, "{reply}");
    assert!(
        reply["done"]
            .as_str()
            .unwrap()
            .starts_with("refused: the GitHub App 42 is not installed on x/other"),
        "{reply}"
    );
    assert!(store.all().unwrap().is_empty());
    // Added to the installation: now it is acted on.
    hub.lock()
        .installations
        .get_mut(&7)
        .unwrap()
        .push("x/other".to_owned());
    let (status, reply) = deliver(
        "installation_repositories",
        json!({"action": "added", "installation": {"id": 7},
            "repositories_added": [{"full_name": "x/other"}], "repositories_removed": []}),
    )
    .await;
    assert_eq!(
        (status, &reply["added"]),
        (200, &json!(["x/other"])),
        "{reply}"
    );
    let (status, reply) = deliver("issues", opened("labeled")).await;
    assert_eq!(status, 202, "{reply}");
    assert_eq!(store.all().unwrap().len(), 1, "{reply}");
    // Uninstalled: every repository of the installation is forgotten (and
    // GitHub no longer has it).
    hub.lock().installations.clear();
    let (status, reply) = deliver(
        "installation",
        json!({"action": "deleted", "installation": {"id": 7}, "repositories": []}),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["removed"], json!(["o/r", "x/other"]), "{reply}");
    assert!(store.installed_repos().unwrap().is_empty());
    let mut again = opened("labeled");
    again["label"] = json!({"name": "again"});
    let (_, reply) = deliver("issues", again).await;
    assert!(
        reply["done"].as_str().unwrap().starts_with("refused:"),
        "{reply}"
    );
    task.abort();
}

/// Attack: an installation token that leaks (it rides every push, and a
/// run's repository is a stranger's) reached every repository of the
/// installation. Each token forq buys now names the one repository it
/// acts on, and the hub, as GitHub does, holds it to that one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_installation_token_reaches_only_the_repository_it_was_bought_for() {
    let keys = app_keys().await;
    let hub = Hub::start(42, &keys.public_pem, &[(7, &["o/r", "o/other"])]).await;
    for repo in ["o/r", "o/other"] {
        hub.lock()
            .issues
            .insert((repo.to_owned(), 1), issue(repo, 1, "OWNER"));
    }
    let gh = Github::app(&hub.url, AppKey::from_file(42, &keys.file).unwrap());
    let token = gh.push_token("o/r").await.unwrap().expect("a token");
    // The token bought for o/r, used as it is on o/other: GitHub hides it.
    let stolen = Github::new(&hub.url, Some(token));
    assert!(stolen.issue("o/r", 1).await.is_ok());
    assert!(matches!(
        stolen.issue("o/other", 1).await,
        Err(GithubError::Status { status: 404, .. })
    ));
    // forq itself buys another for o/other.
    assert_eq!(gh.issue("o/other", 1).await.unwrap().number, 1);
    let bought: Vec<Value> = hub
        .calls("POST", "/access_tokens")
        .into_iter()
        .map(|c| c.body)
        .collect();
    assert_eq!(
        bought,
        [
            json!({"repositories": ["r"]}),
            json!({"repositories": ["other"]})
        ]
    );
}

/// Attack: a `Link` header (from a proxy in the way, or an API that is not
/// GitHub's) names the next page on another host: forq followed it with
/// its credential. Pages are followed only on the API's own origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_next_page_on_another_host_is_never_fetched() {
    let keys = app_keys().await;
    let hub = installed_with_five_issues(&keys).await;
    let elsewhere = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    hub.lock().link_base = Some(format!("http://{}", elsewhere.local_addr().unwrap()));
    let gh = Github::app(&hub.url, AppKey::from_file(42, &keys.file).unwrap());
    let err = gh.list_issues("o/r", None, false, None).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("forq follows pages only on the API"),
        "{err}"
    );
    let reached = tokio::time::timeout(Duration::from_millis(300), elsewhere.accept()).await;
    assert!(reached.is_err(), "the other host was called");
}
