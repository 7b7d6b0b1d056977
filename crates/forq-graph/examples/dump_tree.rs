//! Prints the tree-sitter syntax tree of a file, for writing queries:
//! `cargo run -p forq-graph --example dump_tree -- FILE`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: dump_tree FILE")?;
    let path = std::path::Path::new(&path);
    let lang = forq_graph::Lang::of_path(path).ok_or("not a supported language")?;
    let source = std::fs::read(path)?;
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&lang.grammar())?;
    let tree = parser.parse(&source, None).ok_or("did not parse")?;
    let mut out = String::new();
    dump(tree.root_node(), None, 0, &source, &mut out);
    std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes())?;
    Ok(())
}

fn dump(
    node: tree_sitter::Node<'_>,
    field: Option<&str>,
    depth: usize,
    src: &[u8],
    out: &mut String,
) {
    use std::fmt::Write;
    let text = if node.child_count() == 0 {
        node.utf8_text(src).unwrap_or_default()
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "{:indent$}{}{} {text}",
        "",
        field.map(|f| format!("{f}: ")).unwrap_or_default(),
        node.kind(),
        indent = depth * 2
    );
    let mut cursor = node.walk();
    for (i, child) in node.children(&mut cursor).enumerate() {
        if child.is_named() {
            dump(
                child,
                node.field_name_for_child(i as u32),
                depth + 1,
                src,
                out,
            );
        }
    }
}
