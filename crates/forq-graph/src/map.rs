//! The repo map: the symbols that matter most for a question, ranked by
//! personalised PageRank over the graph and rendered to a token budget.

use std::collections::{BTreeMap, HashMap};

use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

use crate::error::Result;
use crate::index::Index;
use crate::store::{Symbol, SymbolFilter};

/// Characters per token assumed when fitting the budget (code averages
/// 3.5–4.5 with the tokenizers of current models).
pub const CHARS_PER_TOKEN: usize = 4;

/// Damping of the random walk.
const DAMPING: f64 = 0.85;
/// Power iterations.
const ITERATIONS: usize = 40;

/// A ranked map of the repository.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RepoMap {
    /// The rendered map: per file, its most important definitions as
    /// `line: signature`.
    pub text: String,
    /// Estimated tokens of `text` (characters / `CHARS_PER_TOKEN`).
    pub tokens: usize,
    /// The definitions shown, most important first.
    pub entries: Vec<MapEntry>,
}

/// One definition of the map.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct MapEntry {
    /// Its id.
    pub id: String,
    /// Its file.
    pub file: String,
    /// Its first line.
    pub line: u32,
    /// Its rank (the personalised PageRank, summing to 1 over the graph).
    pub rank: f64,
}

impl Index {
    /// A map of the repository for a prompt, at most `tokens` tokens long
    /// (and, when the repository has enough to show, within 15% of it),
    /// centred on `focus` (files or symbol ids; empty for the whole
    /// repository).
    pub fn map(&self, tokens: usize, focus: &[String]) -> Result<RepoMap> {
        self.check_complete()?;
        let symbols = self.symbols(&SymbolFilter::default())?;
        let edges = self.all_edges()?;
        let g = SymbolGraph::new(&symbols, &edges);
        let n = g.graph.node_count();
        if n == 0 {
            return Ok(RepoMap {
                text: String::new(),
                tokens: 0,
                entries: Vec::new(),
            });
        }
        let rank = page_rank(&g.graph, &g.personal(&symbols, focus));
        let rank_of = |s: &Symbol| rank[g.node_of[s.id.as_str()].index()];
        let mut order: Vec<usize> = (0..symbols.len()).collect();
        order.sort_by(|&a, &b| {
            rank_of(&symbols[b])
                .total_cmp(&rank_of(&symbols[a]))
                .then(a.cmp(&b))
        });
        // Greedy fill: most important first, a file's header paid once.
        let budget = tokens * CHARS_PER_TOKEN;
        let mut chosen: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        let mut used = 0;
        let mut entries = Vec::new();
        for i in order {
            let s = &symbols[i];
            let line_cost = entry_line(s.line, &s.signature).len() + 1;
            let header = if chosen.contains_key(s.file.as_str()) {
                0
            } else {
                s.file.len() + 2
            };
            if used + line_cost + header > budget {
                continue;
            }
            used += line_cost + header;
            chosen.entry(s.file.as_str()).or_default().push(i);
            entries.push(MapEntry {
                id: s.id.clone(),
                file: s.file.clone(),
                line: s.line,
                rank: rank_of(s),
            });
            if used + 8 >= budget {
                break;
            }
        }
        let text = render(&symbols, chosen, &entries);
        Ok(RepoMap {
            tokens: text.chars().count().div_ceil(CHARS_PER_TOKEN),
            text,
            entries,
        })
    }
}

/// Files in the order of their best entry, each with its chosen entries
/// by line.
fn render(symbols: &[Symbol], chosen: BTreeMap<&str, Vec<usize>>, entries: &[MapEntry]) -> String {
    let mut files: Vec<(&str, Vec<usize>)> = chosen.into_iter().collect();
    let best = |f: &str| {
        entries
            .iter()
            .position(|e| e.file == f)
            .unwrap_or(usize::MAX)
    };
    files.sort_by_key(|(f, _)| best(f));
    let mut text = String::new();
    for (file, mut idx) in files {
        idx.sort_by_key(|&i| symbols[i].line);
        text.push_str(file);
        text.push_str(":\n");
        for i in idx {
            text.push_str(&entry_line(symbols[i].line, &symbols[i].signature));
            text.push('\n');
        }
    }
    text
}

/// The graph PageRank walks: a node per definition and per file (top-level
/// code calls and imports), the resolved edges (an ambiguous one weighs
/// less), and each member tied to its container both ways.
struct SymbolGraph<'a> {
    graph: DiGraph<usize, f64>,
    node_of: HashMap<&'a str, NodeIndex>,
    file_nodes: HashMap<String, NodeIndex>,
}

impl<'a> SymbolGraph<'a> {
    fn new(symbols: &'a [Symbol], edges: &[(String, String, String)]) -> SymbolGraph<'a> {
        let mut graph: DiGraph<usize, f64> = DiGraph::new();
        let mut node_of: HashMap<&str, NodeIndex> = HashMap::new();
        for (i, s) in symbols.iter().enumerate() {
            node_of.insert(s.id.as_str(), graph.add_node(i));
        }
        let mut file_nodes: HashMap<String, NodeIndex> = HashMap::new();
        for (src, dst, confidence) in edges {
            let mut node = |id: &str, graph: &mut DiGraph<usize, f64>| -> NodeIndex {
                if let Some(&n) = node_of.get(id) {
                    return n;
                }
                *file_nodes
                    .entry(id.to_owned())
                    .or_insert_with(|| graph.add_node(usize::MAX))
            };
            let (a, b) = (node(src, &mut graph), node(dst, &mut graph));
            let weight = if confidence == "ambiguous" { 0.2 } else { 1.0 };
            graph.add_edge(a, b, weight);
        }
        // A member matters with its container: contains edges both ways.
        for s in symbols {
            if let (Some(p), Some(&me)) = (
                s.parent.as_deref().and_then(|p| node_of.get(p)),
                node_of.get(s.id.as_str()),
            ) {
                graph.add_edge(me, *p, 0.5);
                graph.add_edge(*p, me, 0.1);
            }
        }
        SymbolGraph {
            graph,
            node_of,
            file_nodes,
        }
    }

    /// The teleport: the `focus` definitions and files alike, or every
    /// node when nothing is in focus.
    fn personal(&self, symbols: &[Symbol], focus: &[String]) -> Vec<f64> {
        let n = self.graph.node_count();
        let mut personal = vec![0.0; n];
        for s in symbols {
            if focus.iter().any(|f| f == &s.id || f == &s.file) {
                personal[self.node_of[s.id.as_str()].index()] = 1.0;
            }
        }
        for f in focus {
            if let Some(&node) = self.file_nodes.get(f) {
                personal[node.index()] = 1.0;
            }
        }
        let total: f64 = personal.iter().sum();
        if total == 0.0 {
            personal.fill(1.0 / n as f64);
        } else {
            personal.iter_mut().for_each(|p| *p /= total);
        }
        personal
    }
}

fn entry_line(line: u32, signature: &str) -> String {
    format!("{line:>6}: {signature}")
}

/// Personalised PageRank by power iteration: weighted out-edges split a
/// node's rank; dangling nodes and the teleport go to `personal`.
fn page_rank(graph: &DiGraph<usize, f64>, personal: &[f64]) -> Vec<f64> {
    let n = graph.node_count();
    let out_weight: Vec<f64> = graph
        .node_indices()
        .map(|a| graph.edges(a).map(|e| *e.weight()).sum())
        .collect();
    let mut rank = personal.to_vec();
    for _ in 0..ITERATIONS {
        let mut next = vec![0.0; n];
        let mut dangling = 0.0;
        for a in graph.node_indices() {
            let r = rank[a.index()];
            if out_weight[a.index()] == 0.0 {
                dangling += r;
                continue;
            }
            for e in graph.edges(a) {
                use petgraph::visit::EdgeRef;
                next[e.target().index()] += DAMPING * r * e.weight() / out_weight[a.index()];
            }
        }
        for (i, v) in next.iter_mut().enumerate() {
            *v += (1.0 - DAMPING + DAMPING * dangling) * personal[i];
        }
        rank = next;
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_flows_to_what_is_depended_on() {
        // a -> c, b -> c: c ranks highest; ranks sum to 1.
        let mut g: DiGraph<usize, f64> = DiGraph::new();
        let (a, b, c) = (g.add_node(0), g.add_node(1), g.add_node(2));
        g.add_edge(a, c, 1.0);
        g.add_edge(b, c, 1.0);
        let r = page_rank(&g, &[1.0 / 3.0; 3]);
        assert!(r[c.index()] > r[a.index()] && r[c.index()] > r[b.index()]);
        assert!((r.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn personalisation_pulls_rank_to_the_focus() {
        let mut g: DiGraph<usize, f64> = DiGraph::new();
        let (a, b, c, d) = (g.add_node(0), g.add_node(1), g.add_node(2), g.add_node(3));
        g.add_edge(a, b, 1.0);
        g.add_edge(c, d, 1.0);
        let r = page_rank(&g, &[1.0, 0.0, 0.0, 0.0]);
        assert!(r[b.index()] > r[d.index()]);
    }
}
