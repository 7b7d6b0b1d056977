//! The index's queries (`queries/<lang>/*.scm`) matched by one walk of
//! the tree, not by tree-sitter's query cursor.
//!
//! The cursor keeps a set of in-progress states for every node it visits,
//! whatever the patterns ask, and costs about as much again as the parse
//! (a query of the single pattern `(call) @call` costs 0.44× the parse of
//! sympy). The index's patterns are shallow and each starts at a node of
//! one named kind, so a preorder walk that looks a node's kind up in a
//! table and tries only the patterns rooted there finds the same matches
//! for the price of the walk.
//!
//! The query files stay the one statement of what is extracted: this
//! module reads the subset of the query language they use — node patterns
//! (`(kind …)`, `(_)`), fields (`name: …`), negated fields (`!name`),
//! alternations (`[…]`), captures (`@name`), and the `#eq?` and `#match?`
//! predicates — and refuses anything else by name, so a query that
//! grows past it fails when compiled, not silently. Matching follows
//! tree-sitter's rules: named nodes only, a pattern's children match the
//! node's children in order but not necessarily adjacent, and each way
//! they can be matched is a match of its own (the two bases of `class
//! C(A, B)` are two matches). A test runs both over every source file of
//! the workspace and the fixtures and requires the same matches.

use std::collections::HashMap;
use std::num::NonZeroU16;

use tree_sitter::{Language, Node};

use crate::error::{Error, Result};
use crate::lang::{Lang, QueryKind};

/// A capture's index in [`Matcher::capture_names`].
type CaptureId = u16;

/// The captures of a match in progress.
type Captured<'t> = Vec<(CaptureId, Node<'t>)>;

/// A node's named children with their fields.
type Kids<'t> = Vec<(Node<'t>, Option<NonZeroU16>)>;

/// One node of a pattern.
#[derive(Debug)]
enum Pat {
    /// A named node of a kind (`None`: `(_)`, any named node), with the
    /// child patterns that must match its children in order.
    Node {
        kind: Option<u16>,
        children: Vec<Step>,
        /// `(… (x) .)`: the last step matches the last named child.
        anchored_end: bool,
        /// Fields the node must not have.
        absent: Vec<NonZeroU16>,
        captures: Vec<CaptureId>,
    },
    /// `[…]`: any of the alternatives.
    Alt {
        alternatives: Vec<Pat>,
        captures: Vec<CaptureId>,
    },
}

/// A child pattern, under a field or not.
#[derive(Debug)]
struct Step {
    field: Option<NonZeroU16>,
    /// `. (…)`: the child right after the previous step's (the first
    /// named child, for the first step).
    anchored: bool,
    pat: Pat,
}

/// A text predicate over a capture.
#[derive(Debug)]
enum Predicate {
    /// `(#eq? @c "text")`
    Eq(CaptureId, String),
    /// `(#eq? @a @b)`
    EqCapture(CaptureId, CaptureId),
    /// `(#match? @c "regex")`
    Match(CaptureId, regex::Regex),
}

/// A top-level pattern and the query file it came from.
#[derive(Debug)]
struct Pattern {
    kind: QueryKind,
    root: Pat,
    predicates: Vec<Predicate>,
}

/// The compiled queries of one language.
#[derive(Debug)]
pub(crate) struct Matcher {
    patterns: Vec<Pattern>,
    /// Pattern indices by the canonical id of their root's kind.
    by_kind: Vec<Vec<usize>>,
    /// Patterns whose root is `(_)` (tried at every named node).
    anywhere: Vec<usize>,
    /// A kind id → the first named kind id of the same name (a grammar can
    /// give one visible name several ids).
    canonical: Vec<u16>,
    capture_names: Vec<String>,
}

/// One match: the query file its pattern came from, and its captures.
pub(crate) struct Found<'m, 't> {
    pub(crate) kind: QueryKind,
    pub(crate) captures: Vec<(&'m str, Node<'t>)>,
}

impl Matcher {
    /// Compiles the query files of `lang` (each `(file name, kind,
    /// source)`), naming the file and the place of the first thing it
    /// cannot read.
    pub(crate) fn new(lang: Lang, files: &[(&'static str, QueryKind, &str)]) -> Result<Matcher> {
        let language = lang.grammar();
        let count = language.node_kind_count();
        let mut names: HashMap<&str, u16> = HashMap::new();
        let mut canonical = Vec::with_capacity(count);
        for id in 0..count as u16 {
            let named = language.node_kind_is_named(id);
            let name = language.node_kind_for_id(id).unwrap_or_default();
            let first = if named {
                *names.entry(name).or_insert(id)
            } else {
                id
            };
            canonical.push(first);
        }
        let mut compiler = Compiler {
            language: &language,
            kinds: &names,
            captures: Vec::new(),
        };
        let mut patterns = Vec::new();
        for &(file, kind, source) in files {
            let mut tokens = Tokens::new(source);
            let fail = |tokens: &Tokens<'_>, message: String| Error::Query {
                lang: lang.name(),
                name: file,
                message: format!("line {}: {message}", tokens.line()),
            };
            while tokens.peek().is_some() {
                let mut predicates = Vec::new();
                let root = compiler
                    .pattern(&mut tokens, &mut predicates)
                    .map_err(|m| fail(&tokens, m))?;
                patterns.push(Pattern {
                    kind,
                    root,
                    predicates,
                });
            }
        }
        let mut by_kind = vec![Vec::new(); count];
        let mut anywhere = Vec::new();
        for (i, p) in patterns.iter().enumerate() {
            let mut roots = Vec::new();
            root_kinds(&p.root, &mut roots);
            for root in roots {
                match root {
                    Some(k) => by_kind[k as usize].push(i),
                    None => anywhere.push(i),
                }
            }
        }
        for list in &mut by_kind {
            list.dedup();
        }
        anywhere.dedup();
        Ok(Matcher {
            patterns,
            by_kind,
            anywhere,
            canonical,
            capture_names: compiler.captures,
        })
    }

    /// Every match of every pattern in `tree`, the patterns rooted at a
    /// node tried in their order when the walk reaches it (preorder).
    pub(crate) fn run<'m, 't>(
        &'m self,
        tree: &'t tree_sitter::Tree,
        source: &[u8],
        mut sink: impl FnMut(Found<'m, 't>),
    ) {
        let mut cursor = tree.walk();
        // Gathers a node's children for the patterns (one cursor for the
        // whole walk: a cursor of their own each cost an allocation).
        let scratch = std::cell::RefCell::new(tree.walk());
        let mut caps: Captured<'t> = Vec::new();
        loop {
            let node = cursor.node();
            if node.is_named() {
                let kind = self.canonical_of(node);
                let rooted = self
                    .by_kind
                    .get(kind as usize)
                    .map_or(&[][..], Vec::as_slice);
                // The node's children, gathered once for all the patterns
                // rooted at it.
                let mut kids = None;
                let mut attempt = |i: usize| {
                    let p = &self.patterns[i];
                    self.at(&p.root, node, &scratch, &mut kids, &mut caps, &mut |caps| {
                        if p.predicates.iter().all(|pr| holds(pr, caps, source)) {
                            sink(Found {
                                kind: p.kind,
                                captures: caps
                                    .iter()
                                    .map(|&(c, n)| (self.capture_names[c as usize].as_str(), n))
                                    .collect(),
                            });
                        }
                    });
                };
                if self.anywhere.is_empty() {
                    rooted.iter().for_each(|&i| attempt(i));
                } else {
                    let mut order: Vec<usize> =
                        rooted.iter().chain(&self.anywhere).copied().collect();
                    order.sort_unstable();
                    order.dedup();
                    order.into_iter().for_each(attempt);
                }
            }
            // A leaf has no child to go to (asking the cursor costs more).
            if node.child_count() > 0 && cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return;
                }
            }
        }
    }

    fn canonical_of(&self, node: Node<'_>) -> u16 {
        let id = node.kind_id();
        self.canonical.get(id as usize).copied().unwrap_or(id)
    }

    /// Matches `pat` at `node`, calling `then` once per way it matches with
    /// the captures so far (and restoring them after).
    /// `kids`: `node`'s children once gathered, kept for the next pattern
    /// tried at the same node.
    fn at<'t>(
        &self,
        pat: &Pat,
        node: Node<'t>,
        scratch: &std::cell::RefCell<tree_sitter::TreeCursor<'t>>,
        kids: &mut Option<Kids<'t>>,
        caps: &mut Captured<'t>,
        then: &mut dyn FnMut(&mut Captured<'t>),
    ) {
        match pat {
            Pat::Alt {
                alternatives,
                captures,
            } => {
                for alt in alternatives {
                    self.at(alt, node, scratch, kids, caps, &mut |caps| {
                        let base = caps.len();
                        caps.extend(captures.iter().map(|&c| (c, node)));
                        then(caps);
                        caps.truncate(base);
                    });
                }
            }
            Pat::Node {
                kind,
                children,
                anchored_end,
                absent,
                captures,
            } => {
                if !node.is_named() || kind.is_some_and(|k| self.canonical_of(node) != k) {
                    return;
                }
                if absent
                    .iter()
                    .any(|&f| node.child_by_field_id(f.get()).is_some())
                {
                    return;
                }
                let base = caps.len();
                caps.extend(captures.iter().map(|&c| (c, node)));
                if children.is_empty() {
                    then(caps);
                } else {
                    let kids = kids.get_or_insert_with(|| {
                        let mut kids = Vec::with_capacity(node.child_count() as usize);
                        let mut cursor = scratch.borrow_mut();
                        cursor.reset(node);
                        if cursor.goto_first_child() {
                            loop {
                                let kid = cursor.node();
                                if kid.is_named() {
                                    kids.push((kid, cursor.field_id()));
                                }
                                if !cursor.goto_next_sibling() {
                                    break;
                                }
                            }
                        }
                        kids
                    });
                    let end = *anchored_end;
                    self.steps(children, kids, 0, scratch, caps, &mut |caps, next| {
                        if !end || next == kids.len() {
                            then(caps);
                        }
                    });
                }
                caps.truncate(base);
            }
        }
    }

    /// Matches `steps` against `kids`, in order, each step at any kid
    /// after the previous one's (right after it when anchored); `then`
    /// also learns the index after the last kid matched.
    fn steps<'t>(
        &self,
        steps: &[Step],
        kids: &[(Node<'t>, Option<NonZeroU16>)],
        from: usize,
        scratch: &std::cell::RefCell<tree_sitter::TreeCursor<'t>>,
        caps: &mut Captured<'t>,
        then: &mut dyn FnMut(&mut Captured<'t>, usize),
    ) {
        let Some((step, rest)) = steps.split_first() else {
            then(caps, from);
            return;
        };
        for (j, &(kid, field)) in kids.iter().enumerate().skip(from) {
            if step.anchored && j != from {
                break;
            }
            if step.field.is_some() && field != step.field {
                continue;
            }
            self.at(&step.pat, kid, scratch, &mut None, caps, &mut |caps| {
                self.steps(rest, kids, j + 1, scratch, caps, then)
            });
        }
    }
}

/// The canonical kinds a pattern can start at (`None`: any).
fn root_kinds(pat: &Pat, out: &mut Vec<Option<u16>>) {
    match pat {
        Pat::Node { kind, .. } => out.push(*kind),
        Pat::Alt { alternatives, .. } => {
            for alt in alternatives {
                root_kinds(alt, out);
            }
        }
    }
}

/// Whether a predicate holds for every node captured under its name (one
/// not captured in this match does not constrain it, as in tree-sitter).
fn holds(predicate: &Predicate, caps: &[(CaptureId, Node<'_>)], source: &[u8]) -> bool {
    let texts = |id: CaptureId| {
        caps.iter()
            .filter(move |&&(c, _)| c == id)
            .map(|&(_, n)| n.utf8_text(source).unwrap_or_default())
    };
    match predicate {
        Predicate::Eq(c, text) => texts(*c).all(|t| t == text),
        Predicate::EqCapture(a, b) => texts(*a).zip(texts(*b)).all(|(x, y)| x == y),
        Predicate::Match(c, re) => texts(*c).all(|t| re.is_match(t)),
    }
}

struct Compiler<'a> {
    language: &'a Language,
    kinds: &'a HashMap<&'a str, u16>,
    captures: Vec<String>,
}

impl Compiler<'_> {
    fn capture(&mut self, name: &str) -> CaptureId {
        match self.captures.iter().position(|c| c == name) {
            Some(i) => i as CaptureId,
            None => {
                self.captures.push(name.to_owned());
                (self.captures.len() - 1) as CaptureId
            }
        }
    }

    fn field(&self, name: &str) -> std::result::Result<NonZeroU16, String> {
        self.language
            .field_id_for_name(name)
            .ok_or_else(|| format!("no field `{name}` in this grammar"))
    }

    /// One pattern with its trailing captures; predicates met inside it go
    /// to `predicates`.
    fn pattern(
        &mut self,
        t: &mut Tokens<'_>,
        predicates: &mut Vec<Predicate>,
    ) -> std::result::Result<Pat, String> {
        let mut pat = match t.next() {
            Some(Token::Open) => self.node(t, predicates)?,
            Some(Token::OpenAlt) => {
                let mut alternatives = Vec::new();
                while t.peek() != Some(Token::CloseAlt) {
                    if t.peek().is_none() {
                        return Err("`[` is never closed".into());
                    }
                    alternatives.push(self.pattern(t, predicates)?);
                }
                t.next();
                Pat::Alt {
                    alternatives,
                    captures: Vec::new(),
                }
            }
            other => return Err(format!("expected `(` or `[`, found {other:?}")),
        };
        while let Some(Token::Capture(name)) = t.peek() {
            t.next();
            let id = self.capture(name);
            match &mut pat {
                Pat::Node { captures, .. } | Pat::Alt { captures, .. } => captures.push(id),
            }
        }
        Ok(pat)
    }

    /// The inside of `( … )`, the `(` taken.
    fn node(
        &mut self,
        t: &mut Tokens<'_>,
        predicates: &mut Vec<Predicate>,
    ) -> std::result::Result<Pat, String> {
        let kind = match t.next() {
            Some(Token::Word("_")) => None,
            Some(Token::Word(name)) => {
                let supertype = || {
                    (0..self.language.node_kind_count() as u16).any(|id| {
                        self.language.node_kind_is_supertype(id)
                            && self.language.node_kind_for_id(id) == Some(name)
                    })
                };
                match self.kinds.get(name) {
                    Some(&id) => Some(id),
                    None if supertype() => {
                        return Err(format!(
                            "`{name}` is a supertype; this matcher takes concrete kinds only"
                        ))
                    }
                    None => return Err(format!("no named node kind `{name}` in this grammar")),
                }
            }
            Some(Token::Predicate(name)) => {
                return Err(format!("predicate `#{name}` where a pattern was expected"))
            }
            other => return Err(format!("expected a node kind after `(`, found {other:?}")),
        };
        let mut children = Vec::new();
        let mut absent = Vec::new();
        let (mut anchor, mut anchored_end) = (false, false);
        loop {
            let token = t.peek();
            if token != Some(Token::Anchor) && anchor {
                if token == Some(Token::Close) {
                    anchored_end = true;
                } else if !matches!(token, Some(Token::Field(_) | Token::Open | Token::OpenAlt)) {
                    return Err("`.` must stand before a child pattern or `)`".into());
                }
            }
            match token {
                Some(Token::Anchor) => {
                    t.next();
                    anchor = true;
                    continue;
                }
                Some(Token::Close) => {
                    t.next();
                    break;
                }
                Some(Token::Field(name)) => {
                    t.next();
                    let field = Some(self.field(name)?);
                    let pat = self.pattern(t, predicates)?;
                    children.push(Step {
                        field,
                        anchored: anchor,
                        pat,
                    });
                }
                Some(Token::Negated(name)) => {
                    t.next();
                    absent.push(self.field(name)?);
                }
                Some(Token::Open) if t.predicate_follows() => {
                    t.next();
                    predicates.push(self.predicate(t)?);
                }
                Some(Token::Open | Token::OpenAlt) => {
                    let pat = self.pattern(t, predicates)?;
                    children.push(Step {
                        field: None,
                        anchored: anchor,
                        pat,
                    });
                }
                None => return Err("`(` is never closed".into()),
                Some(other) => return Err(format!("unexpected {other:?} in a pattern")),
            }
            anchor = false;
        }
        Ok(Pat::Node {
            kind,
            children,
            anchored_end,
            absent,
            captures: Vec::new(),
        })
    }

    /// `#eq?` or `#match?` with its arguments and `)`, the `(` taken.
    fn predicate(&mut self, t: &mut Tokens<'_>) -> std::result::Result<Predicate, String> {
        let Some(Token::Predicate(name)) = t.next() else {
            return Err("expected a predicate".into());
        };
        let Some(Token::Capture(first)) = t.next() else {
            return Err(format!("`#{name}` takes a capture first"));
        };
        let first = self.capture(first);
        let predicate = match (name, t.next()) {
            ("eq?", Some(Token::Str(text))) => Predicate::Eq(first, text),
            ("eq?", Some(Token::Capture(other))) => Predicate::EqCapture(first, self.capture(other)),
            ("match?", Some(Token::Str(pattern))) => Predicate::Match(
                first,
                regex::Regex::new(&pattern).map_err(|e| format!("`#match?` pattern: {e}"))?,
            ),
            (name, other) => {
                return Err(format!(
                    "predicate `#{name}` with {other:?} is not one this matcher reads (`#eq?`, `#match?`)"
                ))
            }
        };
        match t.next() {
            Some(Token::Close) => Ok(predicate),
            other => Err(format!(
                "`#{name}` takes two arguments, then `)`; found {other:?}"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token<'s> {
    Open,
    Close,
    OpenAlt,
    CloseAlt,
    /// `.`
    Anchor,
    /// A node kind or `_`.
    Word(&'s str),
    /// `name:`
    Field(&'s str),
    /// `!name`
    Negated(&'s str),
    /// `@name`
    Capture(&'s str),
    /// `#name` (`eq?`, `match?`)
    Predicate(&'s str),
    /// A string literal, escapes resolved.
    Str(String),
    /// Anything else, as written.
    Other(&'s str),
}

struct Tokens<'s> {
    source: &'s str,
    at: usize,
}

impl<'s> Tokens<'s> {
    fn new(source: &'s str) -> Tokens<'s> {
        Tokens { source, at: 0 }
    }

    /// The 1-based line of the next token.
    fn line(&self) -> usize {
        self.source[..self.at].matches('\n').count() + 1
    }

    fn skip_blank(&mut self) {
        loop {
            let rest = &self.source[self.at..];
            let trimmed = rest.trim_start();
            self.at += rest.len() - trimmed.len();
            if trimmed.starts_with(';') {
                self.at += trimmed.find('\n').unwrap_or(trimmed.len());
            } else {
                return;
            }
        }
    }

    fn peek(&mut self) -> Option<Token<'s>> {
        let at = self.at;
        let token = self.next();
        self.at = at;
        token
    }

    /// Whether the next two tokens are `(` and a predicate.
    fn predicate_follows(&mut self) -> bool {
        let at = self.at;
        let open = self.next();
        let name = self.next();
        self.at = at;
        open == Some(Token::Open) && matches!(name, Some(Token::Predicate(_)))
    }

    fn next(&mut self) -> Option<Token<'s>> {
        self.skip_blank();
        let rest = &self.source[self.at..];
        let first = rest.chars().next()?;
        let single = match first {
            '(' => Some(Token::Open),
            ')' => Some(Token::Close),
            '[' => Some(Token::OpenAlt),
            ']' => Some(Token::CloseAlt),
            _ => None,
        };
        if let Some(token) = single {
            self.at += 1;
            return Some(token);
        }
        if first == '"' {
            let mut text = String::new();
            let mut chars = rest.char_indices().skip(1);
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        self.at += i + 1;
                        return Some(Token::Str(text));
                    }
                    '\\' => match chars.next() {
                        Some((_, 'n')) => text.push('\n'),
                        Some((_, 't')) => text.push('\t'),
                        Some((_, c)) => text.push(c),
                        None => break,
                    },
                    c => text.push(c),
                }
            }
            self.at = self.source.len();
            return Some(Token::Other("an unterminated string"));
        }
        let end = rest
            .find(|c: char| c.is_whitespace() || "()[]\";".contains(c))
            .unwrap_or(rest.len());
        let word = &rest[..end];
        self.at += end;
        Some(if word == "." {
            Token::Anchor
        } else if let Some(name) = word.strip_prefix('@') {
            Token::Capture(name)
        } else if let Some(name) = word.strip_prefix('#') {
            Token::Predicate(name)
        } else if let Some(name) = word.strip_prefix('!') {
            Token::Negated(name)
        } else if let Some(name) = word.strip_suffix(':') {
            Token::Field(name)
        } else if word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            Token::Word(word)
        } else {
            Token::Other(word)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use streaming_iterator::StreamingIterator;

    fn matcher(lang: Lang, kind: QueryKind, source: &str) -> Result<Matcher> {
        Matcher::new(lang, &[("test.scm", kind, source)])
    }

    /// A match as comparable text: its kind and its captures' names and
    /// places, sorted.
    type Key = (String, Vec<(String, usize, usize)>);

    fn key(kind: QueryKind, caps: impl Iterator<Item = (String, Node<'static>)>) -> Key {
        let _ = kind;
        let mut caps: Vec<(String, usize, usize)> = caps
            .map(|(name, n)| (name, n.start_byte(), n.end_byte()))
            .collect();
        caps.sort();
        (format!("{kind:?}"), caps)
    }

    /// What tree-sitter's own cursor finds, and what the walk finds, over
    /// one file.
    fn both(lang: Lang, source: &[u8]) -> (Vec<Key>, Vec<Key>) {
        let mut parser = tree_sitter::Parser::new();
        let tree: &'static tree_sitter::Tree = Box::leak(Box::new(
            crate::extract::parse(&mut parser, lang, source).unwrap(),
        ));
        let mut theirs = Vec::new();
        let mut files = Vec::new();
        for kind in QueryKind::ALL {
            let Some(text) = lang.query_source(kind) else {
                continue;
            };
            files.push((kind.file_name(), kind, text));
            let query = lang.query(kind).unwrap().unwrap();
            let names = query.capture_names();
            let mut cursor = tree_sitter::QueryCursor::new();
            let mut it = cursor.matches(&query, tree.root_node(), source);
            while let Some(m) = it.next() {
                theirs.push(key(
                    kind,
                    m.captures()
                        .iter()
                        .map(|c| (names[c.index as usize].to_owned(), c.node)),
                ));
            }
        }
        let matcher = Matcher::new(lang, &files).unwrap();
        let mut ours = Vec::new();
        matcher.run(tree, source, |found| {
            ours.push(key(
                found.kind,
                found.captures.iter().map(|&(n, node)| (n.to_owned(), node)),
            ))
        });
        theirs.sort();
        ours.sort();
        (theirs, ours)
    }

    /// Compares the two over every source file under `dir`; returns the
    /// matches compared per language.
    fn compare_tree(dir: &std::path::Path) -> HashMap<&'static str, usize> {
        let mut per_lang: HashMap<&str, usize> = HashMap::new();
        for (lang, rel, path) in crate::index::walk_sources(dir) {
            let Ok(source) = std::fs::read(&path) else {
                continue;
            };
            let (theirs, ours) = both(lang, &source);
            if theirs != ours {
                let missing: Vec<_> = theirs
                    .iter()
                    .filter(|k| !ours.contains(k))
                    .take(3)
                    .collect();
                let extra: Vec<_> = ours
                    .iter()
                    .filter(|k| !theirs.contains(k))
                    .take(3)
                    .collect();
                panic!(
                    "{}/{rel}: {} matches by the cursor, {} by the walk; missing {missing:?}, extra {extra:?}",
                    dir.display(),
                    theirs.len(),
                    ours.len()
                );
            }
            *per_lang.entry(lang.name()).or_default() += theirs.len();
        }
        per_lang
    }

    /// Over every source file of the workspace (Rust), the examples and the
    /// polyglot fixture (every language), the walk finds exactly the
    /// matches tree-sitter's query cursor finds.
    #[test]
    fn matches_what_the_query_cursor_matches() {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let workspace = manifest.parent().unwrap().parent().unwrap();
        let mut per_lang: HashMap<&str, usize> = HashMap::new();
        for dir in ["crates", "examples"] {
            for (lang, n) in compare_tree(&workspace.join(dir)) {
                *per_lang.entry(lang).or_default() += n;
            }
        }
        for lang in [
            "python",
            "rust",
            "javascript",
            "typescript",
            "go",
            "java",
            "c",
            "cpp",
        ] {
            assert!(
                per_lang.get(lang).copied().unwrap_or(0) > 5,
                "too few {lang} matches compared: {per_lang:?}"
            );
        }
    }

    /// The same over any tree: `FORQ_GRAPH_CORPUS=DIR cargo test -p
    /// forq-graph --lib matcher -- --ignored` (sympy's 1,562 files agree).
    #[test]
    #[ignore = "needs FORQ_GRAPH_CORPUS"]
    fn matches_what_the_query_cursor_matches_over_a_corpus() {
        let dir = std::env::var("FORQ_GRAPH_CORPUS").expect("FORQ_GRAPH_CORPUS=DIR");
        let per_lang = compare_tree(std::path::Path::new(&dir));
        eprintln!("matches compared: {per_lang:?}");
        assert!(!per_lang.is_empty(), "no source file under {dir}");
    }

    #[test]
    fn every_query_file_compiles() {
        for lang in Lang::ALL {
            let files: Vec<_> = QueryKind::ALL
                .into_iter()
                .filter_map(|k| lang.query_source(k).map(|s| (k.file_name(), k, s)))
                .collect();
            Matcher::new(lang, &files).unwrap_or_else(|e| panic!("{}: {e}", lang.name()));
        }
    }

    #[test]
    fn each_way_children_match_is_a_match() {
        let m = matcher(
            Lang::Python,
            QueryKind::Bases,
            "(class_definition superclasses: (argument_list (identifier) @base)) @def",
        )
        .unwrap();
        let source = b"class C(A, B):\n    pass\n";
        let mut parser = tree_sitter::Parser::new();
        let tree = crate::extract::parse(&mut parser, Lang::Python, source).unwrap();
        let mut bases = Vec::new();
        m.run(&tree, source, |f| {
            let (_, n) = f.captures.iter().find(|(c, _)| *c == "base").unwrap();
            bases.push(n.utf8_text(source).unwrap().to_owned());
        });
        assert_eq!(bases, ["A", "B"]);
    }

    #[test]
    fn predicates_filter_matches() {
        let m = matcher(
            Lang::Python,
            QueryKind::Calls,
            r#"(call function: (identifier) @callee (#match? @callee "^te") (#eq? @callee "test")) @call"#,
        )
        .unwrap();
        let source = b"test()\ntell()\nother()\n";
        let mut parser = tree_sitter::Parser::new();
        let tree = crate::extract::parse(&mut parser, Lang::Python, source).unwrap();
        let mut n = 0;
        m.run(&tree, source, |_| n += 1);
        assert_eq!(n, 1);
    }

    #[test]
    fn what_it_cannot_read_is_refused_by_name() {
        let err = |q: &str| {
            matcher(Lang::Python, QueryKind::Calls, q)
                .unwrap_err()
                .to_string()
        };
        assert!(err("(no_such_kind) @x").contains("no named node kind `no_such_kind`"));
        assert!(err("(call nope: (identifier))").contains("no field `nope`"));
        assert!(err("(call (identifier)* @x)").contains("unexpected"));
        assert!(err(r#"(call (identifier) @x (#any-of? @x "a"))"#).contains("#any-of?"));
        assert!(err("(call").contains("never closed"));
        assert!(err("(expression) @e").contains("`expression` is a supertype"));
        assert!(err("(call)\n(call").contains("line 2"));
    }
}
