//! Trusted contributors from the dashboard's API: read from a GitHub
//! repository's forq.yml, changed through a pull request that edits only
//! the list.

use super::hub::{app_keys, Hub};
use super::*;
use forq_app::github::{AppKey, Github};

const FORQ_YML: &str = "# who pays for runs\nfunding:\n  mode: contributor   # each brings a key\n  trusted:\n    - alice\ntest:\n  timeout_s: 60\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trusted_contributors_change_through_a_pull_request_to_forq_yml() {
    let keys = app_keys().await;
    let hub = Hub::start(42, &keys.public_pem, &[(7, &["o/r", "o/flow"])]).await;
    hub.lock().files.insert(
        ("o/r".to_owned(), "forq.yml".to_owned()),
        FORQ_YML.to_owned(),
    );
    hub.lock().files.insert(
        ("o/flow".to_owned(), "forq.yml".to_owned()),
        "funding: {mode: contributor, trusted: [alice]}\n".to_owned(),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(&dir.path().join("forq.db")).unwrap());
    let github = Github::app(&hub.url, AppKey::from_file(42, &keys.file).unwrap());
    let (addr, task) = spawn(Control::new(store).github(github), loopback()).await;
    let url = format!("http://{addr}/api/trusted");
    let (status, listed) = get_json(&format!("{url}?repo=o/r")).await;
    assert_eq!(
        (status, &listed["trusted"]),
        (200, &json!(["alice"])),
        "{listed}"
    );
    let client = reqwest::Client::new();
    let post = |body: Value| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let reply = client.post(&url).json(&body).send().await.unwrap();
            (
                reply.status().as_u16(),
                reply.json::<Value>().await.unwrap(),
            )
        }
    };
    let (status, proposed) =
        post(json!({"repo": "https://github.com/o/r", "add": ["bob"], "remove": ["alice"]})).await;
    assert_eq!(status, 201, "{proposed}");
    assert_eq!(
        (&proposed["before"], &proposed["after"]),
        (&json!(["alice"]), &json!(["bob"]))
    );
    let branch = proposed["branch"].as_str().unwrap().to_owned();
    assert!(branch.starts_with("forq/trusted-"), "{branch}");
    {
        let h = hub.lock();
        assert_eq!(
            h.refs
                .get(&("o/r".to_owned(), branch.clone()))
                .map(String::as_str),
            Some("head-of-main")
        );
        assert_eq!(h.puts.len(), 1);
        assert_eq!(
            h.puts[0]["text"],
            "# who pays for runs\nfunding:\n  mode: contributor   # each brings a key\n  trusted: [\"bob\"]\ntest:\n  timeout_s: 60\n",
            "only the list changed; comments and the rest stay"
        );
        assert_eq!(
            (&h.puts[0]["branch"], &h.puts[0]["replaces"]),
            (&json!(branch), &json!(format!("blob-{}", FORQ_YML.len())))
        );
        assert_eq!(h.opened.len(), 1);
        assert_eq!(
            (&h.opened[0]["pull"]["head"], &h.opened[0]["pull"]["base"]),
            (&json!(branch), &json!("main"))
        );
        assert_eq!(
            h.opened[0]["pull"]["title"],
            "forq.yml: trust bob; stop trusting alice"
        );
        assert_eq!(
            h.files[&("o/r".to_owned(), "forq.yml".to_owned())],
            FORQ_YML,
            "nothing changes until a person merges"
        );
    }
    // Not a login, nothing to change, a layout not edited safely.
    let (status, reply) = post(json!({"repo": "o/r", "add": ["bob: [x]"]})).await;
    assert_eq!(status, 400, "{reply}");
    let (status, reply) = post(json!({"repo": "o/r", "add": ["alice"]})).await;
    assert_eq!(status, 400, "{reply}");
    assert!(
        reply["error"]
            .as_str()
            .unwrap()
            .contains("nothing to change"),
        "{reply}"
    );
    let (status, reply) = post(json!({"repo": "o/flow", "add": ["bob"]})).await;
    assert_eq!(status, 422, "{reply}");
    assert!(
        reply["error"]
            .as_str()
            .unwrap()
            .contains("change funding.trusted by hand"),
        "{reply}"
    );
    assert_eq!(hub.lock().opened.len(), 1);
    task.abort();
}
