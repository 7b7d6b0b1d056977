//! A keyword argument a call leaves out, where the caller holds a value
//! by the parameter's very name: `width(text, tabsize=self.tabsize)` →
//! `width(text, tabsize=self.tabsize, term_program=self.term_program)`
//! (wcwidth 0.8.0), `_merge_with(a, b, _setter=setter)` → `…,
//! iteratee=iteratee` (pydash 5.0.1). ARJA's argument insertion, with the
//! argument found by name: a parameter the callee gives a default, so
//! leaving it out raised nothing and only the behaviour differs. Python
//! only. Only with `Mutate::templates`.

use crate::brancher::mutate::Mutation;

/// The keyword parameters (those with a default, and keyword-only ones)
/// of the Python function defined at 1-based `line` of `source`.
pub(crate) fn keyword_params(source: &str, line: u32) -> Vec<String> {
    let mut parser = tree_sitter::Parser::new();
    if parser
        .set_language(&forq_graph::Lang::Python.grammar())
        .is_err()
    {
        return Vec::new();
    }
    let Some(tree) = parser.parse(source, None) else {
        return Vec::new();
    };
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        let row = line.saturating_sub(1) as usize;
        if n.start_position().row > row || n.end_position().row < row {
            continue;
        }
        if n.kind() == "function_definition" && n.start_position().row == row {
            return n
                .child_by_field_name("parameters")
                .map(|p| keywords_of(p, source))
                .unwrap_or_default();
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    Vec::new()
}

/// The parameters of `params` a caller may pass by keyword and may leave
/// out: those with a default (and `self`/`cls` never).
fn keywords_of(params: tree_sitter::Node<'_>, source: &str) -> Vec<String> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let mut c = params.walk();
    params
        .named_children(&mut c)
        .filter(|p| matches!(p.kind(), "default_parameter" | "typed_default_parameter"))
        .filter_map(|p| p.child_by_field_name("name"))
        .map(|n| text(n).to_owned())
        .collect()
}

/// The name a call calls: `f(…)` → `f`, `obj.m(…)` → `m`.
fn callee(call: tree_sitter::Node<'_>, source: &str) -> Option<String> {
    let f = call.child_by_field_name("function")?;
    let name = match f.kind() {
        "identifier" => f,
        "attribute" => f.child_by_field_name("attribute")?,
        _ => return None,
    };
    name.utf8_text(source.as_bytes()).ok().map(str::to_owned)
}

/// The names the function `func` holds a value by before byte `at`: its
/// parameters and the names it assigns earlier.
fn names_before(func: tree_sitter::Node<'_>, source: &str, at: usize) -> Vec<String> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("").to_owned();
    let mut out: Vec<String> = crate::brancher::syntax::parameters(func, source)
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let mut stack = vec![func];
    while let Some(n) = stack.pop() {
        if n.start_byte() >= at {
            continue;
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
        if n.kind() == "assignment" && n.end_byte() <= at {
            out.extend(
                n.child_by_field_name("left")
                    .filter(|l| l.kind() == "identifier")
                    .map(text),
            );
        }
    }
    out
}

/// The attributes `self.X = …` assigns anywhere in the class holding
/// `func`.
fn self_attributes(func: tree_sitter::Node<'_>, source: &str) -> Vec<String> {
    let Some(class) = std::iter::successors(func.parent(), |p| p.parent())
        .find(|p| p.kind() == "class_definition")
    else {
        return Vec::new();
    };
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let mut out = Vec::new();
    let mut stack = vec![class];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
        let target = (n.kind() == "assignment")
            .then(|| n.child_by_field_name("left"))
            .flatten()
            .filter(|l| l.kind() == "attribute")
            .filter(|l| l.child_by_field_name("object").map(text) == Some("self"))
            .and_then(|l| l.child_by_field_name("attribute"));
        if let Some(name) = target.map(text) {
            if !out.iter().any(|o| o == name) {
                out.push(name.to_owned());
            }
        }
    }
    out
}

/// For each call in the Python function `func`, each keyword parameter
/// of its callee (`keywords_of_callee`, by the name called) that the call
/// does not pass and that the caller holds by the same name — a name
/// bound before the call (`p=p`), else an attribute its class sets on
/// `self` (`p=self.p`) — added as the call's last argument.
pub(crate) fn forward_arguments(
    func: tree_sitter::Node<'_>,
    source: &str,
    keywords_of_callee: &mut dyn FnMut(&str) -> Vec<String>,
) -> Vec<Mutation> {
    let text = |n: tree_sitter::Node<'_>| n.utf8_text(source.as_bytes()).unwrap_or("");
    let method = func
        .child_by_field_name("parameters")
        .and_then(|p| p.named_child(0))
        .is_some_and(|p| text(p) == "self");
    let attributes = if method {
        self_attributes(func, source)
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    let mut stack = vec![func];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
        if n.kind() != "call" {
            continue;
        }
        let (Some(name), Some(args)) = (callee(n, source), n.child_by_field_name("arguments"))
        else {
            continue;
        };
        if args.kind() != "argument_list" {
            continue;
        }
        let mut c = args.walk();
        let given: Vec<tree_sitter::Node<'_>> = args.named_children(&mut c).collect();
        // A call that splats its arguments passes what it passes.
        if given
            .iter()
            .any(|a| matches!(a.kind(), "list_splat" | "dictionary_splat"))
        {
            continue;
        }
        let passed: Vec<&str> = given
            .iter()
            .filter(|a| a.kind() == "keyword_argument")
            .filter_map(|a| a.child_by_field_name("name"))
            .map(text)
            .collect();
        let Some(last) = given.last() else { continue };
        let missing: Vec<String> = keywords_of_callee(&name)
            .into_iter()
            .filter(|p| !passed.contains(&p.as_str()))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let bound = names_before(func, source, n.start_byte());
        for p in missing {
            let value = if bound.contains(&p) {
                p.clone()
            } else if attributes.contains(&p) {
                format!("self.{p}")
            } else {
                continue;
            };
            out.push(Mutation {
                start: last.end_byte(),
                end: last.end_byte(),
                text: format!(", {p}={value}"),
                operator: "forward argument",
                weight: 1.0,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keyword_the_call_leaves_out_is_passed_where_the_caller_holds_it() {
        let callee_src = "def width(\n    text,\n    *,\n    tabsize: int = 8,\n    term_program: bool | str = False,\n    ambiguous=1,\n) -> int:\n    return len(text)\n";
        assert_eq!(
            keyword_params(callee_src, 1),
            ["tabsize", "term_program", "ambiguous"]
        );
        assert!(keyword_params(callee_src, 2).is_empty());
        let src = "class Wrapper:\n    def __init__(self, tabsize, term_program):\n        self.tabsize = tabsize\n        self.term_program = term_program\n\n    def _width(self, text):\n        return text_width(text, tabsize=self.tabsize)\n\n\ndef merge(a, b, iteratee=None, _setter=None):\n    setter = _setter\n    return merge(a.x, b.x, _setter=setter)\n";
        let tree = crate::brancher::mutate::parse_python(src);
        let root = tree.root_node();
        let mut asked = Vec::new();
        let mut keywords = |name: &str| {
            asked.push(name.to_owned());
            match name {
                "text_width" => vec![
                    "tabsize".to_owned(),
                    "term_program".to_owned(),
                    "ambiguous".to_owned(),
                ],
                "merge" => vec!["iteratee".to_owned(), "_setter".to_owned()],
                _ => Vec::new(),
            }
        };
        let apply = |m: &Mutation| m.applied_to(src);
        let method = root
            .named_child(0)
            .and_then(|c| c.child_by_field_name("body"))
            .and_then(|b| b.named_child(1))
            .unwrap();
        let found = forward_arguments(method, src, &mut keywords);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(apply(&found[0]).contains(
            "return text_width(text, tabsize=self.tabsize, term_program=self.term_program)\n"
        ));
        let merge = root.named_child(1).unwrap();
        let found = forward_arguments(merge, src, &mut keywords);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(apply(&found[0])
            .contains("return merge(a.x, b.x, _setter=setter, iteratee=iteratee)\n"));
        assert_eq!(asked, ["text_width", "merge"]);
    }
}
