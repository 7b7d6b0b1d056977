//! What resolution reads: every definition, reference and import of the
//! index in memory, shared by the resolvers (filled from a cold load's
//! rows or read back from the database).

#[allow(clippy::wildcard_imports)] // resolution's own types and imports
use super::*;

#[derive(Debug, Clone)]
pub(super) struct Sym {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) kind: String,
    pub(super) parent: Option<String>,
    pub(super) file: String,
}

/// The definitions of one name, grouped so that a lookup by file or by
/// type does not walk them all (`new` has thousands in a large tree).
#[derive(Debug, Default)]
pub(super) struct NameGroups {
    pub(super) by_file: HashMap<String, Vec<Arc<Sym>>>,
    /// Methods by the name of the type (class, impl, trait...) holding them.
    pub(super) by_type: HashMap<String, Vec<Arc<Sym>>>,
}

#[derive(Debug, Clone)]
pub(super) struct RefRow {
    pub(super) id: i64,
    pub(super) file: String,
    /// `call` or `base`.
    pub(super) kind: &'static str,
    pub(super) scope: Option<String>,
    pub(super) name: String,
    pub(super) receiver: Option<String>,
    pub(super) line: u32,
}

#[derive(Debug, Clone)]
pub(super) struct ImportRow {
    pub(super) id: i64,
    pub(super) file: String,
    pub(super) module: String,
    pub(super) name: Option<String>,
    pub(super) local: Option<String>,
    pub(super) line: u32,
}

/// One of a file's imports, as the file's shared list holds it (a
/// binding is looked up for most references: copying the row, four
/// strings, each time was 7% of `resolve_ref`'s instructions).
pub(super) struct Bound(pub(super) Arc<Vec<ImportRow>>, pub(super) usize);

impl std::ops::Deref for Bound {
    type Target = ImportRow;

    fn deref(&self) -> &ImportRow {
        &self.0[self.1]
    }
}

pub(super) fn sym_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Sym> {
    Ok(Sym {
        id: r.get(0)?,
        name: r.get(1)?,
        kind: r.get(2)?,
        parent: r.get(3)?,
        file: r.get(4)?,
    })
}

pub(super) fn ref_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RefRow> {
    let kind: String = r.get(2)?;
    Ok(RefRow {
        id: r.get(0)?,
        file: r.get(1)?,
        kind: if kind == "base" { "base" } else { "call" },
        scope: r.get(3)?,
        name: r.get(4)?,
        receiver: r.get(5)?,
        line: r.get(6)?,
    })
}

pub(super) fn import_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ImportRow> {
    Ok(ImportRow {
        id: r.get(0)?,
        file: r.get(1)?,
        module: r.get(2)?,
        name: r.get(3)?,
        local: r.get(4)?,
        line: r.get(5)?,
    })
}

pub(super) const SYM_COLUMNS: &str = "SELECT id, name, kind, parent, file FROM symbols";

pub(super) const REF_COLUMNS: &str = "SELECT id, file, kind, scope, name, receiver, line FROM refs";

pub(super) const IMPORT_COLUMNS: &str = "SELECT id, file, module, name, local, line FROM imports";

impl Tables {
    /// Fills the tables from a cold load's rows, kept as written.
    pub(super) fn preload_written(
        &mut self,
        syms: Vec<Sym>,
        refs: &[RefRow],
        imports: &[ImportRow],
    ) -> rusqlite::Result<()> {
        let bases = refs.iter().filter_map(|r| match (&r.scope, r.kind) {
            (Some(scope), "base") => Some(Ok((scope.clone(), r.name.clone()))),
            _ => None,
        });
        self.preload(
            syms.into_iter().map(Ok),
            imports.iter().cloned().map(Ok),
            bases,
        )
    }

    /// Every parsed file's language; with `preload`, every definition,
    /// import and base too.
    pub(super) fn load(conn: &Connection, preload: bool) -> rusqlite::Result<Tables> {
        let mut t = Tables::default();
        {
            let mut stmt = conn.prepare("SELECT path, lang FROM files WHERE status = 'parsed'")?;
            let rows =
                stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            for row in rows {
                let (path, lang) = row?;
                if let Some(lang) = Lang::ALL.into_iter().find(|l| l.name() == lang) {
                    t.langs.insert(path, lang);
                }
            }
        }
        for path in t.langs.keys() {
            let (one, two) = (tail(path, 1), tail(path, 2));
            t.by_tail
                .entry(one.to_owned())
                .or_default()
                .push(path.clone());
            if two != one {
                t.by_tail
                    .entry(two.to_owned())
                    .or_default()
                    .push(path.clone());
            }
        }
        if preload {
            let mut syms = conn.prepare(SYM_COLUMNS)?;
            let mut imports = conn.prepare(&format!("{IMPORT_COLUMNS} ORDER BY id"))?;
            let mut bases = conn.prepare(
                "SELECT scope, name FROM refs WHERE kind = 'base' AND scope IS NOT NULL",
            )?;
            t.preload(
                syms.query_map([], sym_row)?,
                imports.query_map([], import_row)?,
                bases.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?,
            )?;
        }
        Ok(t)
    }

    /// Takes in every definition (by id and by name), every import (by
    /// file, in the order given) and every base (`(type id, base name)`).
    pub(super) fn preload(
        &mut self,
        syms: impl IntoIterator<Item = rusqlite::Result<Sym>>,
        imports: impl IntoIterator<Item = rusqlite::Result<ImportRow>>,
        bases: impl IntoIterator<Item = rusqlite::Result<(String, String)>>,
    ) -> rusqlite::Result<()> {
        let mut by_name: HashMap<String, Vec<Arc<Sym>>> = HashMap::new();
        for sym in syms {
            let sym = Arc::new(sym?);
            self.by_id.insert(sym.id.clone(), Some(sym.clone()));
            by_name.entry(sym.name.clone()).or_default().push(sym);
        }
        self.by_name = by_name.into_iter().map(|(k, v)| (k, Arc::new(v))).collect();
        let mut by_file: HashMap<String, Vec<ImportRow>> = HashMap::new();
        for row in imports {
            let row = row?;
            by_file.entry(row.file.clone()).or_default().push(row);
        }
        self.imports = by_file.into_iter().map(|(k, v)| (k, Arc::new(v))).collect();
        for base in bases {
            let (scope, name) = base?;
            self.bases.entry(scope).or_default().push(name);
        }
        Ok(())
    }
}

/// What resolution looks names up in: every file's language, and (when
/// preloaded) every definition, import and base, so that resolvers on
/// several threads can share one load.
#[derive(Clone, Default)]
pub(super) struct Tables {
    pub(super) langs: HashMap<String, Lang>,
    /// Files by the last one and by the last two parts of their path
    /// (`core/__init__.py`), for suffix lookups of module paths: by one
    /// part alone, `__init__.py` names every package.
    pub(super) by_tail: HashMap<String, Vec<String>>,
    pub(super) by_name: HashMap<String, Arc<Vec<Arc<Sym>>>>,
    pub(super) by_id: HashMap<String, Option<Arc<Sym>>>,
    pub(super) imports: HashMap<String, Arc<Vec<ImportRow>>>,
    pub(super) bases: HashMap<String, Vec<String>>,
}
