//! The stored form of a file's statements, variable occurrences and
//! def-use links: one blob per file, integers as LEB128 varints and deltas,
//! every string once in the file's own name list.
//!
//! Rows cost SQLite a record header, a rowid and a b-tree cell each, and
//! every query of them is by file (def-use links never leave a file): on a
//! large project the 2.2 million rows they took were 60% of the database.
//! A statement's text is not stored: it is the source's own bytes, read
//! back by byte range when a query shows it.
//!
//! Layout (version 1): `1`, the names (`count`, then `len` and UTF-8
//! bytes each), the statements (`count`, then per statement: kind as a
//! name, scope as `symbol index + 1` or 0, line as a signed delta from the
//! previous statement's, `end_line - line`, start byte as a signed delta
//! from the previous statement's, byte length), the variables (`count`,
//! then: statement as a signed delta from the previous variable's,
//! `name * 2 + write`, line as a signed delta from its statement's, column)
//! and the links (`count`, then: `def` as a delta from the previous link's
//! (they are sorted), `use` as a signed delta from `def`, name).

use std::collections::HashMap;

use crate::extract::FileFacts;

const VERSION: u64 = 1;

/// A statement as stored: strings by their index in [`Flow::names`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawStatement {
    pub(crate) kind: u32,
    /// Index of the enclosing function in the file's symbols, in the
    /// order they were written.
    pub(crate) scope: Option<u32>,
    pub(crate) line: u32,
    pub(crate) end_line: u32,
    /// The statement's bytes in the file.
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// A variable occurrence as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawVar {
    pub(crate) stmt: u32,
    pub(crate) name: u32,
    pub(crate) write: bool,
    pub(crate) line: u32,
    pub(crate) col: u32,
}

/// A def-use link as stored: statement indexes and a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawLink {
    pub(crate) def: u32,
    pub(crate) use_: u32,
    pub(crate) name: u32,
}

/// One file's flow, decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Flow {
    pub(crate) names: Vec<String>,
    pub(crate) statements: Vec<RawStatement>,
    pub(crate) vars: Vec<RawVar>,
    pub(crate) links: Vec<RawLink>,
}

/// What the writer stores of a file's flow.
pub(crate) struct Encoded {
    pub(crate) data: Vec<u8>,
    /// Each variable name with whether the file reads it somewhere.
    pub(crate) names: Vec<(String, bool)>,
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_signed(out: &mut Vec<u8>, v: i64) {
    put(out, ((v << 1) ^ (v >> 63)) as u64);
}

/// The stored form of `facts`' flow; `None` when it has none.
pub(crate) fn encode<'a>(facts: &'a FileFacts) -> Option<Encoded> {
    if facts.statements.is_empty() {
        return None;
    }
    let symbols: HashMap<&str, u32> = facts
        .symbols
        .iter()
        .zip(0..)
        .map(|(s, i)| (s.id.as_str(), i))
        .collect();
    let mut names: Vec<&str> = Vec::new();
    let mut index: HashMap<&str, u32> = HashMap::new();
    fn intern<'f>(
        names: &mut Vec<&'f str>,
        index: &mut HashMap<&'f str, u32>,
        name: &'f str,
    ) -> u32 {
        *index.entry(name).or_insert_with(|| {
            names.push(name);
            names.len() as u32 - 1
        })
    }
    let mut intern = |name: &'a str| intern(&mut names, &mut index, name);
    let mut body = Vec::with_capacity(facts.statements.len() * 8 + facts.vars.len() * 5);
    put(&mut body, facts.statements.len() as u64);
    let (mut line, mut start) = (0i64, 0i64);
    for s in &facts.statements {
        put(&mut body, intern(&s.kind).into());
        let scope = s.scope.as_deref().and_then(|id| symbols.get(id));
        put(&mut body, scope.map_or(0, |&i| u64::from(i) + 1));
        put_signed(&mut body, i64::from(s.line) - line);
        put(&mut body, u64::from(s.end_line.saturating_sub(s.line)));
        put_signed(&mut body, s.start as i64 - start);
        put(&mut body, s.end.saturating_sub(s.start) as u64);
        (line, start) = (s.line.into(), s.start as i64);
    }
    put(&mut body, facts.vars.len() as u64);
    let mut stmt = 0i64;
    let mut read: HashMap<u32, bool> = HashMap::new();
    for v in &facts.vars {
        let name = intern(&v.name);
        *read.entry(name).or_default() |= !v.write;
        put_signed(&mut body, i64::from(v.stmt) - stmt);
        put(&mut body, u64::from(name) * 2 + u64::from(v.write));
        let at = facts.statements[v.stmt as usize].line;
        put_signed(&mut body, i64::from(v.line) - i64::from(at));
        put(&mut body, v.col.into());
        stmt = v.stmt.into();
    }
    put(&mut body, facts.defuse.len() as u64);
    let mut def = 0u64;
    for d in &facts.defuse {
        put(&mut body, u64::from(d.def).saturating_sub(def));
        put_signed(&mut body, i64::from(d.use_) - i64::from(d.def));
        put(&mut body, intern(&d.name).into());
        def = d.def.into();
    }
    let mut data = Vec::with_capacity(body.len() + names.len() * 8);
    put(&mut data, VERSION);
    put(&mut data, names.len() as u64);
    for n in &names {
        put(&mut data, n.len() as u64);
        data.extend_from_slice(n.as_bytes());
    }
    data.extend_from_slice(&body);
    let names = names
        .iter()
        .zip(0..)
        .filter_map(|(n, i)| read.get(&i).map(|&r| ((*n).to_owned(), r)))
        .collect();
    Some(Encoded { data, names })
}

/// A reader over a blob; every step is checked, a short or malformed blob
/// reads as `None`.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn next(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.data.get(self.at)?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    fn signed(&mut self) -> Option<i64> {
        let v = self.next()?;
        Some((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.next()?).ok()
    }

    /// A count, refused when the blob could not hold that many items.
    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.next()?).ok()?;
        (n <= self.data.len()).then_some(n)
    }

    fn names(&mut self) -> Option<Vec<String>> {
        if self.next()? != VERSION {
            return None;
        }
        let n = self.count()?;
        let mut names = Vec::with_capacity(n);
        for _ in 0..n {
            let len = self.count()?;
            let bytes = self.data.get(self.at..self.at.checked_add(len)?)?;
            names.push(std::str::from_utf8(bytes).ok()?.to_owned());
            self.at += len;
        }
        Some(names)
    }
}

/// The names a blob holds (what the writer deletes beside it).
pub(crate) fn names(data: &[u8]) -> Option<Vec<String>> {
    Reader { data, at: 0 }.names()
}

/// Decodes a blob written by [`encode`].
pub(crate) fn decode(data: &[u8]) -> Option<Flow> {
    let mut r = Reader { data, at: 0 };
    let names = r.names()?;
    let known = |i: u32| ((i as usize) < names.len()).then_some(i);
    let n = r.count()?;
    let mut statements = Vec::with_capacity(n);
    let (mut line, mut start) = (0i64, 0i64);
    for _ in 0..n {
        let kind = known(r.u32()?)?;
        let scope = r.u32()?.checked_sub(1);
        line = line.checked_add(r.signed()?)?;
        let end_line = u32::try_from(line).ok()?.checked_add(r.u32()?)?;
        start = start.checked_add(r.signed()?)?;
        let first = usize::try_from(start).ok()?;
        statements.push(RawStatement {
            kind,
            scope,
            line: u32::try_from(line).ok()?,
            end_line,
            start: first,
            end: first.checked_add(usize::try_from(r.next()?).ok()?)?,
        });
    }
    let n = r.count()?;
    let mut vars = Vec::with_capacity(n);
    let mut stmt = 0i64;
    for _ in 0..n {
        stmt = stmt.checked_add(r.signed()?)?;
        let at = statements.get(usize::try_from(stmt).ok()?)?.line;
        let name = r.next()?;
        let line = i64::from(at).checked_add(r.signed()?)?;
        vars.push(RawVar {
            stmt: stmt as u32,
            name: known(u32::try_from(name / 2).ok()?)?,
            write: name % 2 == 1,
            line: u32::try_from(line).ok()?,
            col: r.u32()?,
        });
    }
    let n = r.count()?;
    let mut links = Vec::with_capacity(n);
    let mut def = 0u64;
    for _ in 0..n {
        def = def.checked_add(r.next()?)?;
        let use_ = i64::try_from(def).ok()?.checked_add(r.signed()?)?;
        let link = RawLink {
            def: u32::try_from(def).ok()?,
            use_: u32::try_from(use_).ok()?,
            name: known(r.u32()?)?,
        };
        if link.def as usize >= statements.len() || link.use_ as usize >= statements.len() {
            return None;
        }
        links.push(link);
    }
    (r.at == data.len()).then_some(Flow {
        names,
        statements,
        vars,
        links,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::{DefUse, Statement, VarOcc};

    fn facts() -> FileFacts {
        let statement = |scope: Option<&str>, kind: &str, line, end_line, start, end| Statement {
            scope: scope.map(str::to_owned),
            kind: kind.to_owned(),
            line,
            end_line,
            start,
            end,
        };
        let var = |stmt, name: &str, write, line, col| VarOcc {
            stmt,
            name: name.to_owned(),
            write,
            line,
            col,
        };
        FileFacts {
            statements: vec![
                statement(None, "import_statement", 1, 1, 0, 9),
                statement(Some("m.py#f:function"), "signature", 3, 3, 20, 20),
                statement(Some("m.py#f:function"), "return_statement", 4, 6, 40, 300),
                // Out of order and before the previous one: deltas go back.
                statement(None, "expression_statement", 2, 2, 10, 19),
            ],
            vars: vec![
                var(0, "os", true, 1, 8),
                var(2, "os", false, 5, 12),
                var(1, "x", true, 3, 7),
                var(2, "x", false, 4, 12),
            ],
            defuse: vec![
                DefUse {
                    def: 0,
                    use_: 2,
                    name: "os".to_owned(),
                },
                DefUse {
                    def: 1,
                    use_: 2,
                    name: "x".to_owned(),
                },
            ],
            ..FileFacts::default()
        }
    }

    #[test]
    fn a_file_flow_reads_back_as_written() {
        let mut f = facts();
        f.symbols = vec![crate::store::Symbol {
            id: "m.py#f:function".to_owned(),
            name: "f".to_owned(),
            qualname: "f".to_owned(),
            kind: "function".to_owned(),
            file: "m.py".to_owned(),
            line: 3,
            end_line: 6,
            parent: None,
            signature: "def f(x):".to_owned(),
            doc: None,
            test: false,
        }];
        let encoded = encode(&f).unwrap();
        let flow = decode(&encoded.data).unwrap();
        let name = |i: u32| flow.names[i as usize].as_str();
        assert_eq!(flow.statements.len(), 4);
        for (raw, want) in flow.statements.iter().zip(&f.statements) {
            assert_eq!(name(raw.kind), want.kind);
            assert_eq!(
                raw.scope.map(|i| f.symbols[i as usize].id.as_str()),
                want.scope.as_deref()
            );
            assert_eq!(
                (raw.line, raw.end_line, raw.start, raw.end),
                (want.line, want.end_line, want.start, want.end)
            );
        }
        for (raw, want) in flow.vars.iter().zip(&f.vars) {
            assert_eq!(
                (raw.stmt, name(raw.name), raw.write, raw.line, raw.col),
                (
                    want.stmt,
                    want.name.as_str(),
                    want.write,
                    want.line,
                    want.col
                )
            );
        }
        let links: Vec<(u32, u32, &str)> = flow
            .links
            .iter()
            .map(|l| (l.def, l.use_, name(l.name)))
            .collect();
        assert_eq!(links, vec![(0, 2, "os"), (1, 2, "x")]);
        // `os` and `x` are both read; kinds are not variables.
        let mut vars = encoded.names.clone();
        vars.sort();
        assert_eq!(vars, vec![("os".to_owned(), true), ("x".to_owned(), true)]);
        assert_eq!(
            names(&encoded.data).unwrap().len(),
            flow.names.len(),
            "the names alone read the same list"
        );
    }

    #[test]
    fn a_damaged_blob_reads_as_nothing_rather_than_garbage() {
        let data = encode(&facts()).unwrap().data;
        for cut in 0..data.len() {
            assert_eq!(decode(&data[..cut]), None, "cut at {cut}");
        }
        let mut longer = data.clone();
        longer.push(0);
        assert_eq!(decode(&longer), None);
        let mut newer = data;
        newer[0] = 2;
        assert_eq!(decode(&newer), None);
    }
}
