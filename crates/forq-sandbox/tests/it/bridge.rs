//! This machine as a container on the engine's default bridge reaches it
//! (shared with forq-cli's tests).

/// The gateway of the engine's default bridge. The engine names it, or
/// gives only the subnet (Docker 20.10 does, for a bridge it made itself),
/// whose first address the gateway is.
pub(crate) async fn bridge_gateway() -> String {
    let out = forq_sandbox::host_command("docker")
        .args([
            "network",
            "inspect",
            "bridge",
            "-f",
            "{{range .IPAM.Config}}{{.Gateway}} {{.Subnet}}{{end}}",
        ])
        .output()
        .await
        .expect("run the docker CLI");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        [gateway, _subnet] => (*gateway).to_owned(),
        [subnet] if subnet.contains('/') => first_host(subnet),
        _ => panic!("no bridge gateway: {out:?}"),
    }
}

/// The first host address of an IPv4 subnet (`172.17.0.0/16` → `172.17.0.1`).
fn first_host(subnet: &str) -> String {
    let network: std::net::Ipv4Addr = subnet
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("not an IPv4 subnet: {subnet}"));
    std::net::Ipv4Addr::from(u32::from(network) + 1).to_string()
}
