//! The arguments of `forq graph` and `forq audit`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub(crate) enum GraphCommand {
    /// Index (or re-index, incrementally) a repository.
    Index(GraphIndexArgs),
    /// List symbols, filtered by file, name, kind or test-ness.
    Symbols(GraphSymbolsArgs),
    /// What calls SYMBOL, breadth first, with each edge's confidence.
    Callers(GraphWalkArgs),
    /// What SYMBOL calls, breadth first, with each edge's confidence.
    Callees(GraphWalkArgs),
    /// How SYMBOL is called: each call site's arguments (positional or
    /// keyword, value kinds, None passed) and what it does with the result,
    /// counted, and the call sites that break a dominant pattern.
    Patterns(GraphPatternsArgs),
    /// How the codebase writes code (naming per kind, indentation, quotes,
    /// imports, tests, error handling), each with its coverage; only those
    /// at or above --threshold.
    Conventions(GraphConventionsArgs),
    /// The shortest chain of calls from one symbol to another (exit 1: none).
    Path(GraphPathArgs),
    /// What transitively depends on SYMBOL (callers, subclasses, importers).
    AffectedBy(GraphWalkArgs),
    /// Tests that reach SYMBOL through calls, nearest first.
    TestsFor(GraphWalkArgs),
    /// Statements around FILE:LINE with their def-use links.
    Statements(GraphStatementsArgs),
    /// Statements that read NAME, those of the function at --file/--line first.
    Uses(GraphUsesArgs),
    /// A ranked map of the repository for a prompt, to a token budget.
    Map(GraphMapArgs),
    /// Counts of files, symbols, edges and statements.
    Stats(GraphStatsArgs),
    /// Measure parsing, indexing and queries side by side on one tree.
    Bench(GraphBenchArgs),
}

#[derive(Debug, Args)]
pub(crate) struct GraphRepo {
    /// The repository (default: the current directory); re-indexed first
    /// when anything changed, so answers are never stale.
    #[arg(long, default_value = ".")]
    pub(crate) repo: PathBuf,
    #[command(flatten)]
    pub(crate) db: GraphDb,
}

#[derive(Debug, Args)]
pub(crate) struct GraphPathArgs {
    /// Where the chain starts (a SYMBOL: id, qualified name, name or FILE:LINE).
    pub(crate) from: String,
    /// Where it ends.
    pub(crate) to: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Longest chain looked for.
    #[arg(long, default_value_t = 8)]
    pub(crate) max_depth: u32,
}

#[derive(Debug, Args)]
pub(crate) struct GraphStatsArgs {
    /// The repository (default: the current directory).
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,
    #[command(flatten)]
    pub(crate) db: GraphDb,
}

#[derive(Debug, Args)]
pub(crate) struct GraphWalkArgs {
    /// A symbol: its id (`path#Qual.name:kind`), qualified name (`Calc.add`),
    /// name, or FILE:LINE; a name several definitions share is refused with
    /// the candidates.
    pub(crate) symbol: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Steps to follow.
    #[arg(long)]
    pub(crate) depth: Option<u32>,
}

#[derive(Debug, Args)]
pub(crate) struct GraphConventionsArgs {
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// The share of places a convention must hold in to be stated.
    #[arg(long, default_value_t = 0.8)]
    pub(crate) threshold: f64,
}

#[derive(Debug, Args)]
pub(crate) struct GraphPatternsArgs {
    /// A symbol: its id, qualified name, name, or FILE:LINE.
    pub(crate) symbol: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
}

#[derive(Debug, Args)]
pub(crate) struct GraphStatementsArgs {
    /// FILE:LINE (FILE relative to the repository).
    pub(crate) location: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Lines either side.
    #[arg(long, default_value_t = 3)]
    pub(crate) radius: u32,
}

#[derive(Debug, Args)]
pub(crate) struct GraphUsesArgs {
    /// The variable or name.
    pub(crate) name: String,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Rank this file's uses first.
    #[arg(long)]
    pub(crate) file: Option<String>,
    /// With --file: rank uses in the function holding this line first.
    #[arg(long, requires = "file")]
    pub(crate) line: Option<u32>,
}

#[derive(Debug, Args)]
pub(crate) struct GraphMapArgs {
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Token budget (characters / 4).
    #[arg(long, default_value_t = 1024)]
    pub(crate) tokens: usize,
    /// Files or SYMBOLs to centre the map on (repeatable).
    #[arg(long)]
    pub(crate) focus: Vec<String>,
}

#[derive(Debug, Args)]
pub(crate) struct GraphBenchArgs {
    /// The tree to measure (copied to a temporary directory first).
    pub(crate) path: PathBuf,
    /// Parser threads (default: one per core).
    #[arg(long, default_value_t = 0)]
    pub(crate) threads: usize,
    /// Random symbols per query kind.
    #[arg(long, default_value_t = 100)]
    pub(crate) samples: usize,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GraphDb {
    /// The database (default: REPO/.forq/graph.db).
    #[arg(long)]
    pub(crate) db: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GraphIndexArgs {
    /// The repository (default: the current directory).
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,
    #[command(flatten)]
    pub(crate) db: GraphDb,
    /// Leave out statements and def-use (questions about them answer
    /// empty).
    #[arg(long, conflicts_with = "eager_flow")]
    pub(crate) no_flow: bool,
    /// Compute every file's statements and def-use now, not on the first
    /// question about each file.
    #[arg(long)]
    pub(crate) eager_flow: bool,
    /// Parser threads (default: one per core).
    #[arg(long, default_value_t = 0)]
    pub(crate) threads: usize,
}

#[derive(Debug, Args)]
pub(crate) struct GraphSymbolsArgs {
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
    /// Only this file (path relative to the repository).
    #[arg(long)]
    pub(crate) file: Option<String>,
    /// Only this exact name.
    #[arg(long)]
    pub(crate) name: Option<String>,
    /// Only this kind (class, function, method, struct, trait, impl, test...).
    #[arg(long)]
    pub(crate) kind: Option<String>,
    /// Only tests.
    #[arg(long)]
    pub(crate) tests: bool,
}

/// `forq audit`.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// What to look for (repeatable): undocumented, complexity>N
    /// (complexity alone: over 10), suspected, unused. Default: all four.
    #[arg(long = "query", value_name = "Q", value_parser = parse_audit_query)]
    pub(crate) queries: Vec<forq_graph::AuditQuery>,
    /// At most this many findings of each query.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub(crate) limit: usize,
    /// Also write each finding as a Markdown issue into DIR (created),
    /// for `forq queue --issues DIR`.
    #[arg(long, value_name = "DIR")]
    pub(crate) issues: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) repo: GraphRepo,
}

fn parse_audit_query(s: &str) -> Result<forq_graph::AuditQuery, String> {
    s.parse()
}
