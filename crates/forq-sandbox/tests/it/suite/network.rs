//! Networks: none, the host's, a proxy that reaches only allowed hosts, services reached through their own network.

use super::*;

/// A listener on the host's loopback that counts the connections it gets.
async fn host_listener() -> (u16, tokio::task::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut n = 0;
        while let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(3), listener.accept()).await
        {
            n += 1;
        }
        n
    });
    (port, task)
}

fn connect_script(kind: BackendKind, port: u16) -> String {
    match kind {
        // busybox in the docker image has nc; the host has python3.
        BackendKind::Docker => format!("nc -w 2 127.0.0.1 {port} </dev/null && echo CONNECTED || echo REFUSED"),
        _ => format!(
            "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=2)' 2>/dev/null \
             && echo CONNECTED || echo REFUSED"
        ),
    }
}

pub(crate) async fn no_network_and_no_host_loopback(h: &Harness) {
    let sb = h.create().await;
    // Only a loopback interface exists.
    let out = sh(&*sb, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").await;
    assert_eq!(out.stdout_text(), "lo\n", "interfaces: {out:?}");
    let (port, accepted) = host_listener().await;
    let out = sh(&*sb, &connect_script(h.kind, port)).await;
    assert_eq!(out.stdout_text(), "REFUSED\n", "{out:?}");
    assert_eq!(accepted.await.unwrap(), 0, "the host listener was reached");
    sb.destroy().await.unwrap();
}

pub(crate) async fn host_network_reaches_host_loopback(h: &Harness) {
    // The control for the test above: the same probe connects when asked to.
    let sb = h.create_with(h.spec().network(Network::Host)).await;
    let (port, accepted) = host_listener().await;
    let out = sh(&*sb, &connect_script(h.kind, port)).await;
    assert_eq!(out.stdout_text(), "CONNECTED\n", "{out:?}");
    assert_eq!(accepted.await.unwrap(), 1);
    sb.destroy().await.unwrap();
}

pub(crate) async fn one_exec_can_have_the_host_network(h: &Harness) {
    // An install step reaches the registries; the run before and after it
    // does not.
    let sb = h.create().await;
    let (port, accepted) = host_listener().await;
    let probe = connect_script(h.kind, port);
    let out = sb
        .exec(ExecRequest::shell(probe.clone()).network(Network::Host))
        .await
        .unwrap();
    assert_eq!(out.stdout_text(), "CONNECTED\n", "{out:?}");
    assert_eq!(accepted.await.unwrap(), 1);
    let out = sh(&*sb, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").await;
    assert_eq!(
        out.stdout_text(),
        "lo\n",
        "the next exec is isolated again: {out:?}"
    );
    sb.destroy().await.unwrap();
}

pub(crate) async fn a_network_override_is_refused_not_ignored(h: &Harness) {
    // A container's network is fixed at creation: asking for more is an
    // error that says so, never a silent run without it.
    let sb = h.create().await;
    let err = sb
        .exec(ExecRequest::shell("true").network(Network::Host))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidSpec(_)), "{err}");
    assert!(
        err.to_string()
            .contains("fixed when its container is created"),
        "{err}"
    );
    sb.destroy().await.unwrap();
}

/// An HTTP server on the host at `addr` (loopback, or the bridge gateway)
/// that answers every request with `body`, for as long as the test runs.
async fn http_server(addr: &str, body: &'static str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind(format!("{addr}:0")).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = conn.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

/// busybox wget inside the sandbox: each URL through the proxy settings
/// the exec got, then each of `direct` straight (`-Y off`); one line each.
fn wget_script(urls: &[String], direct: &[String]) -> String {
    let mut script = String::new();
    for url in urls {
        script.push_str(&format!(
            "echo \"get $(busybox wget -q -O - '{url}' 2>&1 | tr '\\n' ' ')\"; "
        ));
    }
    for url in direct {
        script.push_str(&format!(
            "echo \"direct $(busybox wget -Y off -q -O - '{url}' 2>&1 | tr '\\n' ' ')\"; "
        ));
    }
    script
}

/// Whether wget said it could not connect (refused where there is a stack
/// but no listener; no route where the network leads nowhere).
fn unreached(line: &str) -> bool {
    line.contains("refused") || line.contains("unreachable") || line.contains("No route to host")
}

pub(crate) async fn installs_reach_only_allowed_hosts_through_the_proxy(h: &Harness) {
    let host = &h.host_addr;
    let registry = http_server(host, "registry-ok").await;
    let host_service = http_server(host, "host-secret").await;
    let loopback_service = http_server("127.0.0.1", "loopback-secret").await;
    let spec = h
        .spec()
        .network(Network::None)
        .egress(forq_sandbox::EgressAllow::new([format!(
            "{host}:{registry}"
        )]));
    let sb = h.create_with(spec).await;
    let urls = [
        format!("http://{host}:{registry}/simple/"),
        format!("http://{host}:{host_service}/"),
        "http://localhost:1/".to_owned(),
    ];
    let direct = [
        format!("http://{host}:{registry}/"),
        format!("http://{host}:{host_service}/"),
        format!("http://127.0.0.1:{loopback_service}/"),
    ];
    let install = sb
        .exec(
            ExecRequest::shell(format!(
                "echo \"proxy $HTTP_PROXY\"; {}",
                wget_script(&urls, &direct)
            ))
            .network(Network::Proxy)
            .timeout(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    let text = install.stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{install:?}");
    let proxy = lines[0]
        .strip_prefix("proxy ")
        .unwrap_or_default()
        .to_owned();
    assert!(proxy.starts_with("http://"), "no proxy given: {text}");
    assert!(lines[1].contains("registry-ok"), "allowed: {text}");
    assert!(lines[2].contains("403"), "not on the allowlist: {text}");
    assert!(lines[3].contains("403"), "loopback by name: {text}");
    for direct in &lines[4..] {
        assert!(
            unreached(direct) && !direct.contains("secret") && !direct.contains("registry-ok"),
            "straight to the host: {text}"
        );
    }
    // A test run (no network) cannot reach the proxy, nor the host.
    let test_run = sh(
        &*sb,
        &wget_script(
            &[],
            &[format!("{proxy}/"), format!("http://{host}:{registry}/")],
        ),
    )
    .await;
    let text = test_run.stdout_text();
    assert_eq!(text.lines().count(), 2, "{test_run:?}");
    assert!(
        text.lines().all(unreached),
        "a test run reached the proxy or the host: {text}"
    );
    sb.destroy().await.unwrap();
}

/// Whether the engine has a network of this name.
async fn docker_network_exists(name: &str) -> bool {
    forq_sandbox::host_command("docker")
        .args(["network", "inspect", name])
        .output()
        .await
        .is_ok_and(|o| o.status.success())
}

pub(crate) async fn the_egress_sidecar_goes_with_its_sandboxes(h: &Harness) {
    // A fork shares its parent's sidecar; the sidecar and its network are
    // removed when the last sandbox of the lineage is gone.
    let sb = h.create().await;
    let network = format!("forq-egress-{}", sb.id());
    let install = || ExecRequest::shell("echo $HTTP_PROXY").network(Network::Proxy);
    let first = sb.exec(install()).await.unwrap().stdout_text();
    assert!(docker_network_exists(&network).await, "{network} missing");
    let fork = sb.snapshot().await.unwrap().fork().await.unwrap();
    let again = fork.exec(install()).await.unwrap().stdout_text();
    assert_eq!(first, again, "a fork got a sidecar of its own");
    sb.destroy().await.unwrap();
    assert!(
        docker_network_exists(&network).await,
        "removed while a fork still uses it"
    );
    fork.destroy().await.unwrap();
    let mut gone = false;
    for _ in 0..100 {
        if !docker_network_exists(&network).await {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "{network} outlived its sandboxes");
}

pub(crate) async fn an_engine_forq_cannot_enter_refuses_installs_without_a_proxy() {
    // Over TCP and with no egress program, an install would have had to
    // get the host's network; it is refused instead, and says why.
    let mut opts = forq_sandbox::DockerOptions::default();
    opts.host = Some(crate::common::remote_engine());
    let backend = match forq_sandbox::DockerBackend::connect(opts).await {
        Ok(b) => b,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED: no docker engine over tcp: {e}");
            return;
        }
        Err(e) => panic!("the docker engine must answer over tcp under CI: {e}"),
    };
    assert!(!backend.per_exec_network());
    let why = backend.egress_route().unwrap_err();
    assert!(why.contains("egress program"), "{why}");
    let repo = tempfile::tempdir().unwrap();
    let err = backend
        .create(&SandboxSpec::new(repo.path()).network(Network::Proxy))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidSpec(_)), "{err}");
    assert!(err.to_string().contains("egress proxy"), "{err}");
    let sb = backend
        .create(&SandboxSpec::new(repo.path()))
        .await
        .unwrap();
    let err = sb
        .exec(ExecRequest::shell("true").network(Network::Proxy))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("egress"), "{err}");
    sb.destroy().await.unwrap();
}

/// GET `path` over `stream` (HTTP/1.0): the whole answer.
async fn http_get(mut stream: tokio::net::TcpStream, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: preview\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

pub(crate) async fn a_service_is_reached_through_its_network_and_nowhere_else(h: &Harness) {
    let sb = h.create().await;
    let net = match sb.service_network().await {
        Ok(net) => net,
        // Without root, forq cannot enter a namespace to reach the service.
        Err(Error::Unsupported { what, .. }) if what.contains("without root") => {
            sb.destroy().await.unwrap();
            return;
        }
        Err(e) => panic!("a service network as root: {e}"),
    };
    const PORT: u16 = 18763;
    let serve = match h.kind {
        BackendKind::Docker => format!("exec busybox httpd -f -p 127.0.0.1:{PORT} -h ."),
        _ => format!("exec python3 -m http.server {PORT} --bind 127.0.0.1"),
    };
    let request = ExecRequest::shell(serve)
        .service_network(&net)
        .timeout(Duration::from_secs(60));
    // The service runs until asked to stop; then its sandbox goes.
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        tokio::select! {
            out = sb.exec(request) => panic!("the service ended early: {out:?}"),
            _ = stopped => {}
        }
        sb.destroy().await.unwrap();
    });
    // Reached through the network once it listens.
    let mut answer = String::new();
    for _ in 0..100 {
        if let Ok(stream) = net.connect(PORT).await {
            answer = http_get(stream, "/README.md").await;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        answer.contains("200") && answer.contains("# fixture"),
        "{answer:?}"
    );
    // Not from the host: nothing listens there.
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", PORT))
            .await
            .is_err(),
        "the service is on the host's loopback"
    );
    stop.send(()).unwrap();
    task.await.unwrap();
    // The kernel tears the killed processes down on its own time: a moment.
    let mut gone = false;
    for _ in 0..100 {
        if net.connect(PORT).await.is_err() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "the service outlived its sandbox by 5 s");
}
