//! `forq-egress`: forq's egress proxy as a program of its own, for
//! embedders whose binary does not serve it itself. It listens on
//! `0.0.0.0:3128` (or the address given as its one argument) and lets
//! through what `FORQ_EGRESS_ALLOW` (comma-separated) names.
//!
//! The docker backend runs it in a sidecar container when it cannot serve
//! the proxy inside a sandbox's network namespace; see
//! `forq_sandbox::EgressProgram`.

use std::net::SocketAddr;
use std::process::ExitCode;

fn main() -> ExitCode {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("0.0.0.0:{}", forq_sandbox::PROXY_PORT));
    let addr: SocketAddr = match addr.parse() {
        Ok(a) => a,
        Err(e) => return fail(&format!("forq-egress: {addr:?} is not an address to listen on ({e}); pass one like 0.0.0.0:3128")),
    };
    // One thread: the proxy only waits on sockets (and the library does
    // not force a multi-threaded runtime on its embedders).
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&format!("forq-egress: cannot start its runtime: {e}")),
    };
    let allow = forq_sandbox::EgressAllow::from_env();
    match runtime.block_on(forq_sandbox::serve_egress(addr, allow)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("forq-egress: cannot serve on {addr}: {e}")),
    }
}

fn fail(message: &str) -> ExitCode {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{message}");
    ExitCode::from(2)
}
