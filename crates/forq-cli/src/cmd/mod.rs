//! Command implementations, one module per command family. Each returns
//! an [`crate::exit::Exit`] (through `ExitCode`): the one table of what
//! exit codes mean; `forq sandbox run` alone passes its command's own code
//! through.

mod agent;
mod bench;
mod bootstrap;
mod change;
mod config;
mod doctor;
mod eval;
mod fix;
mod golden;
mod graph;
mod models;
mod queue;
mod runs;
mod sandbox;
mod search_bench;
mod serve;
mod worker;

use std::process::ExitCode;

use crate::cli::{
    AgentCommand, Cli, Command, GoldenCommand, GraphCommand, SandboxCommand, SearchCommand,
};

pub(crate) fn run(args: Cli) -> anyhow::Result<ExitCode> {
    // Docker engines forq cannot enter run this binary as their installs'
    // egress proxy (`forq egress-proxy`).
    if let Ok(me) = std::env::current_exe() {
        forq_sandbox::set_default_egress_program(forq_sandbox::EgressProgram::new(
            me,
            ["egress-proxy"],
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match args.command {
            Command::Sandbox(SandboxCommand::Run(a)) => sandbox::run(a).await,
            Command::Sandbox(SandboxCommand::Bench(a)) => bench::run(a).await,
            Command::Sandbox(SandboxCommand::Gc(a)) => sandbox::gc(a).await,
            Command::Graph(GraphCommand::Index(a)) => graph::index(a),
            Command::Graph(GraphCommand::Symbols(a)) => graph::symbols(a),
            Command::Graph(GraphCommand::Callers(a)) => graph::walk(a, graph::Direction::Callers),
            Command::Graph(GraphCommand::Callees(a)) => graph::walk(a, graph::Direction::Callees),
            Command::Graph(GraphCommand::Patterns(a)) => graph::patterns(a),
            Command::Graph(GraphCommand::Conventions(a)) => graph::conventions(a),
            Command::Graph(GraphCommand::Path(a)) => graph::path(a),
            Command::Graph(GraphCommand::AffectedBy(a)) => graph::affected_by(a),
            Command::Graph(GraphCommand::TestsFor(a)) => graph::tests_for(a),
            Command::Graph(GraphCommand::Statements(a)) => graph::statements(a),
            Command::Graph(GraphCommand::Uses(a)) => graph::uses(a),
            Command::Graph(GraphCommand::Map(a)) => graph::map(a),
            Command::Graph(GraphCommand::Stats(a)) => graph::stats(a),
            Command::Graph(GraphCommand::Bench(a)) => graph::bench(a),
            Command::Bootstrap(a) => bootstrap::run(a).await,
            Command::Triage(a) => agent::triage(a).await,
            Command::Agent(AgentCommand::Run(a)) => agent::run(a).await,
            Command::Fix(a) => fix::run(a).await,
            Command::Modify(a) => fix::modify(a).await,
            Command::Rename(a) => change::rename(a).await,
            Command::Document(a) => change::document(a).await,
            Command::Audit(a) => graph::audit(a),
            Command::Search(SearchCommand::Bench(a)) => search_bench::run(a).await,
            Command::Config(c) => config::config(c),
            Command::Queue(a) => queue::queue(a).await,
            Command::Worker(a) => worker::worker(a).await,
            Command::Eval(a) => eval::run(a).await,
            Command::Runs(a) => runs::runs(a).await,
            Command::Files(a) => runs::files(a),
            Command::Push(a) => runs::push(a).await,
            Command::Doctor(a) => doctor::run(a).await,
            Command::Models(a) => models::run(a).await,
            Command::Golden(GoldenCommand::Build(a)) => golden::build(a, false).await,
            Command::Golden(GoldenCommand::Sync(a)) => golden::build(a, true).await,
            Command::Golden(GoldenCommand::Status(a)) => golden::status(a).await,
            Command::Golden(GoldenCommand::List(a)) => golden::list(a).await,
            Command::Golden(GoldenCommand::Rm(a)) => golden::rm(a).await,
            Command::Golden(GoldenCommand::Gc(a)) => golden::gc(a).await,
            Command::Golden(GoldenCommand::Bench(a)) => golden::bench(a).await,
            Command::Serve(a) => serve::serve(a).await,
            Command::EgressProxy => {
                let addr = std::net::SocketAddr::from(([0, 0, 0, 0], forq_sandbox::PROXY_PORT));
                forq_sandbox::serve_egress(addr, forq_sandbox::EgressAllow::from_env()).await?;
                Ok(ExitCode::SUCCESS)
            }
        }
    })
}
