//! Indexes a directory into a temporary database and prints its symbols,
//! edges and def-use links, for checking what the extraction finds:
//! `cargo run -p forq-graph --example graph_dump -- DIR`.

use forq_graph::{Index, SymbolFilter};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: graph_dump DIR")?;
    let db = tempfile::tempdir()?;
    let mut index = Index::open(&db.path().join("g.db"), std::path::Path::new(&dir))?;
    let report = index.update()?;
    let mut out = format!("{report:?}\n");
    for s in index.symbols(&SymbolFilter::default())? {
        out.push_str(&format!(
            "{} {}{}  doc={:?}\n",
            s.kind,
            s.id,
            if s.test { " [test]" } else { "" },
            s.doc
        ));
        for e in index.callees(&s.id, 1)?.items {
            out.push_str(&format!(
                "    -> {} @{} {:?}\n",
                e.callee, e.line, e.confidence
            ));
        }
    }
    out.push_str(&format!("{:#?}\n", index.stats()?));
    std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes())?;
    Ok(())
}
