//! One resolver: a reference or import to its edges, by receiver, import,
//! visible definition, then name alone.

#[allow(clippy::wildcard_imports)] // resolution's own types and imports
use super::*;

/// Kinds that are types (have methods, can be inherited from).
pub(super) const TYPE_KINDS: [&str; 7] = [
    "class",
    "struct",
    "impl",
    "trait",
    "interface",
    "enum",
    "type",
];

/// Receivers that mean "this object".
pub(super) const SELF_RECEIVERS: [&str; 5] = ["self", "this", "Self", "cls", "super()"];

/// What a reference resolved to.
pub(super) struct Found {
    pub(super) targets: Vec<String>,
    /// Through scope, receiver or import.
    pub(super) exact: bool,
    /// How many definitions it could be.
    pub(super) candidates: usize,
}

impl Found {
    pub(super) fn exact(targets: Vec<String>) -> Found {
        Found {
            candidates: targets.len(),
            targets,
            exact: true,
        }
    }

    pub(super) fn listed(targets: Vec<String>) -> Found {
        Found {
            candidates: targets.len(),
            targets,
            exact: false,
        }
    }
}

/// What an import resolves to.
pub(super) enum Target {
    /// Files of the repository (the module, or `module/name`).
    Files(Vec<String>),
    /// Something outside the repository.
    External,
    /// Nothing found, but it is not known to be outside (a Rust
    /// `crate::` path that does not map to a file).
    Unknown,
}

/// What a name resolves to through an import.
pub(super) enum Through {
    /// Definitions in the imported module.
    Found(Vec<String>),
    /// The module is in the repository but does not define the name.
    Missing,
    /// The module is outside the repository: no edge.
    External,
    /// The module could not be placed either way.
    Unknown,
}

pub(super) struct Resolver<'c> {
    /// Where rows not preloaded are read; `None` for a resolver on a
    /// worker thread, whose tables are preloaded.
    pub(super) conn: Option<&'c Connection>,
    /// Shared by the resolvers of a full resolution (preloaded, never
    /// written); a lone resolver's own, filled as it reads.
    pub(super) t: Arc<Tables>,
    /// What each import resolved to.
    pub(super) targets: HashMap<i64, Arc<Target>>,
    /// Per name: its definitions grouped by file and by enclosing type.
    pub(super) groups: HashMap<String, Arc<NameGroups>>,
    /// By-name candidates per (name, receiver or not, language family).
    pub(super) by_name_cache: HashMap<(String, bool, &'static str), Arc<Vec<String>>>,
    pub(super) preloaded: bool,
    /// What a preloaded resolver answers for a name nothing defines and a
    /// file without imports.
    pub(super) no_syms: Arc<Vec<Arc<Sym>>>,
    pub(super) no_imports: Arc<Vec<ImportRow>>,
}

impl<'c> Resolver<'c> {
    pub(super) fn new(conn: &'c Connection, preload: bool) -> rusqlite::Result<Resolver<'c>> {
        Ok(Resolver::with(
            Some(conn),
            Arc::new(Tables::load(conn, preload)?),
            preload,
        ))
    }

    pub(super) fn with(
        conn: Option<&'c Connection>,
        t: Arc<Tables>,
        preloaded: bool,
    ) -> Resolver<'c> {
        Resolver {
            conn,
            t,
            targets: HashMap::new(),
            groups: HashMap::new(),
            by_name_cache: HashMap::new(),
            preloaded,
            no_syms: Arc::default(),
            no_imports: Arc::default(),
        }
    }

    /// The connection for a row that was not preloaded.
    pub(super) fn db(&self) -> &'c Connection {
        self.conn
            .expect("a resolver without a connection has every row preloaded")
    }

    pub(super) fn dirty_rows(
        &mut self,
        dirty: &Dirty,
    ) -> rusqlite::Result<(Vec<RefRow>, Vec<ImportRow>)> {
        let conn = self.db();
        if dirty.all {
            let refs = conn
                .prepare(&format!("{REF_COLUMNS} ORDER BY id"))?
                .query_map([], ref_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let imports = conn
                .prepare(&format!("{IMPORT_COLUMNS} ORDER BY id"))?
                .query_map([], import_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            return Ok((refs, imports));
        }
        let mut refs: HashMap<i64, RefRow> = HashMap::new();
        let mut imports = Vec::new();
        let collect =
            |sql: &str, param: &str, refs: &mut HashMap<i64, RefRow>| -> rusqlite::Result<()> {
                let mut stmt = conn.prepare_cached(sql)?;
                for row in stmt.query_map([param], ref_row)? {
                    let row = row?;
                    refs.insert(row.id, row);
                }
                Ok(())
            };
        for file in &dirty.files {
            collect(&format!("{REF_COLUMNS} WHERE file = ?1"), file, &mut refs)?;
            imports.extend(self.imports_of(file)?.iter().cloned());
        }
        if !dirty.names.is_empty() || dirty.self_calls {
            crate::store::Store::ensure_lookup_indexes(conn)?;
        }
        let mut import_ids: HashSet<i64> = imports.iter().map(|i: &ImportRow| i.id).collect();
        for name in &dirty.names {
            collect(&format!("{REF_COLUMNS} WHERE name = ?1"), name, &mut refs)?;
            collect(
                &format!("{REF_COLUMNS} WHERE receiver = ?1"),
                name,
                &mut refs,
            )?;
            let mut stmt =
                conn.prepare_cached(&format!("{IMPORT_COLUMNS} WHERE name = ?1 OR local = ?1"))?;
            for row in stmt.query_map([name], import_row)? {
                let row = row?;
                if import_ids.insert(row.id) {
                    imports.push(row);
                }
            }
        }
        if dirty.self_calls {
            for receiver in SELF_RECEIVERS {
                collect(
                    &format!("{REF_COLUMNS} WHERE receiver = ?1"),
                    receiver,
                    &mut refs,
                )?;
            }
        }
        let mut refs: Vec<RefRow> = refs.into_values().collect();
        refs.sort_by_key(|r| r.id);
        Ok((refs, imports))
    }

    pub(super) fn named(&mut self, name: &str) -> rusqlite::Result<Arc<Vec<Arc<Sym>>>> {
        if let Some(found) = self.t.by_name.get(name) {
            return Ok(found.clone());
        }
        if self.preloaded {
            // Not a name defined anywhere (the tables are shared: a miss
            // is not cached in them).
            return Ok(self.no_syms.clone());
        }
        let found = Arc::new(
            self.db()
                .prepare_cached(&format!("{SYM_COLUMNS} WHERE name = ?1"))?
                .query_map([name], sym_row)?
                .map(|r| r.map(Arc::new))
                .collect::<rusqlite::Result<Vec<_>>>()?,
        );
        Arc::make_mut(&mut self.t)
            .by_name
            .insert(name.to_owned(), found.clone());
        Ok(found)
    }

    pub(super) fn groups(&mut self, name: &str) -> rusqlite::Result<Arc<NameGroups>> {
        if let Some(g) = self.groups.get(name) {
            return Ok(g.clone());
        }
        let mut g = NameGroups::default();
        for s in self.named(name)?.iter() {
            g.by_file.entry(s.file.clone()).or_default().push(s.clone());
            if let Some(parent) = &s.parent {
                if let Some(p) = self.sym(parent)? {
                    if TYPE_KINDS.contains(&p.kind.as_str()) {
                        g.by_type.entry(p.name.clone()).or_default().push(s.clone());
                    }
                }
            }
        }
        let g = Arc::new(g);
        self.groups.insert(name.to_owned(), g.clone());
        Ok(g)
    }

    pub(super) fn family(&self, file: &str) -> &'static str {
        self.t.langs.get(file).map_or("", |l| l.family())
    }

    pub(super) fn sym(&mut self, id: &str) -> rusqlite::Result<Option<Arc<Sym>>> {
        if let Some(found) = self.t.by_id.get(id) {
            return Ok(found.clone());
        }
        if self.preloaded {
            return Ok(None);
        }
        let found = self
            .db()
            .prepare_cached(&format!("{SYM_COLUMNS} WHERE id = ?1"))?
            .query_row([id], sym_row)
            .optional()?
            .map(Arc::new);
        Arc::make_mut(&mut self.t)
            .by_id
            .insert(id.to_owned(), found.clone());
        Ok(found)
    }

    pub(super) fn imports_of(&mut self, file: &str) -> rusqlite::Result<Arc<Vec<ImportRow>>> {
        if let Some(found) = self.t.imports.get(file) {
            return Ok(found.clone());
        }
        if self.preloaded {
            return Ok(self.no_imports.clone());
        }
        let found = Arc::new(
            self.db()
                .prepare_cached(&format!("{IMPORT_COLUMNS} WHERE file = ?1 ORDER BY id"))?
                .query_map([file], import_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?,
        );
        Arc::make_mut(&mut self.t)
            .imports
            .insert(file.to_owned(), found.clone());
        Ok(found)
    }

    pub(super) fn bases_of(&mut self, type_id: &str) -> rusqlite::Result<Vec<String>> {
        if let Some(found) = self.t.bases.get(type_id) {
            return Ok(found.clone());
        }
        if self.preloaded {
            return Ok(Vec::new());
        }
        let found = self
            .db()
            .prepare_cached("SELECT name FROM refs WHERE kind = 'base' AND scope = ?1")?
            .query_map([type_id], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Arc::make_mut(&mut self.t)
            .bases
            .insert(type_id.to_owned(), found.clone());
        Ok(found)
    }

    /// The chain of enclosing symbols of `scope`, innermost first.
    pub(super) fn ancestors(&mut self, scope: Option<&str>) -> rusqlite::Result<Vec<Arc<Sym>>> {
        let mut out = Vec::new();
        let mut at = scope.map(str::to_owned);
        while let Some(id) = at {
            let Some(sym) = self.sym(&id)? else { break };
            at = sym.parent.clone();
            out.push(sym);
            if out.len() > 32 {
                break;
            }
        }
        Ok(out)
    }

    /// Whether top-level definitions of `file` are in scope in `from`
    /// without an import: the same file, or (Go, Java) the same package
    /// directory.
    pub(super) fn same_scope_file(&self, from: &str, file: &str) -> bool {
        if from == file {
            return true;
        }
        let dir = |p: &str| p.rsplit_once('/').map_or("", |(d, _)| d).len();
        let same_dir = dir(from) == dir(file) && from[..dir(from)] == file[..dir(file)];
        same_dir
            && matches!(self.t.langs.get(from), Some(Lang::Go | Lang::Java))
            && self.t.langs.get(file) == self.t.langs.get(from)
    }

    /// Whether a definition in `file` can be reached by name from `from`.
    pub(super) fn same_family(&self, from: &str, file: &str) -> bool {
        match (self.t.langs.get(from), self.t.langs.get(file)) {
            (Some(a), Some(b)) => a.family() == b.family(),
            _ => false,
        }
    }

    pub(super) fn resolve_ref(
        &mut self,
        row: &RefRow,
        out: &mut Vec<EdgeRow>,
    ) -> rusqlite::Result<()> {
        let found = if row.kind == "base" {
            self.resolve_base(row)?
        } else {
            self.resolve_call(row)?
        };
        let Some(Found {
            targets,
            exact,
            candidates: k,
        }) = found
        else {
            return Ok(());
        };
        let confidence = match (exact, k) {
            (_, 0) => return Ok(()),
            (true, 1) => "exact",
            (false, 1) => "unique",
            _ => "ambiguous",
        };
        let src = row.scope.clone().unwrap_or_else(|| row.file.clone());
        for dst in targets.into_iter().take(MAX_CANDIDATES) {
            out.push(EdgeRow {
                origin: row.id,
                kind: if row.kind == "base" {
                    "inherits"
                } else {
                    "calls"
                },
                src: src.clone(),
                dst,
                confidence,
                candidates: k,
                line: row.line,
            });
        }
        Ok(())
    }

    /// Targets of a call, and whether they were found through scope,
    /// receiver or import (`true`) or by name alone. `None`: no edge.
    pub(super) fn resolve_call(&mut self, row: &RefRow) -> rusqlite::Result<Option<Found>> {
        let name = row.name.as_str();
        let ancestors = self.ancestors(row.scope.as_deref())?;
        let path_call = row.receiver.as_deref().is_some_and(|r| r.ends_with("::"));
        // `import a.b` then `a.b.f()`: the dotted receiver is the module.
        if let Some(dotted) = row.receiver.as_deref().filter(|r| r.contains('.')) {
            let module_import = self
                .imports_of(&row.file)?
                .iter()
                .find(|i| i.name.is_none() && i.module == dotted)
                .cloned();
            if let Some(import) = module_import {
                return self.call_through_module(row, &import, None);
            }
        }
        let receiver = row.receiver.as_deref().map(simple_receiver);
        if let Some(recv) = receiver {
            if SELF_RECEIVERS.contains(&recv) {
                if let Some(owner) = ancestors
                    .iter()
                    .find(|s| TYPE_KINDS.contains(&s.kind.as_str()))
                {
                    let (owner_name, owner_id) = (owner.name.clone(), owner.id.clone());
                    let found = self.methods_of_type(&row.file, &owner_name, &owner_id, name)?;
                    if !found.is_empty() {
                        return Ok(Some(Found::exact(found)));
                    }
                }
            } else if let Some(import) = self.import_binding(&row.file, recv)? {
                let holder = import.name.clone();
                return self.call_through_module(row, &import, holder.as_deref());
            } else {
                let types: Vec<Arc<Sym>> = self
                    .named(recv)?
                    .iter()
                    .filter(|s| {
                        TYPE_KINDS.contains(&s.kind.as_str())
                            && self.same_family(&row.file, &s.file)
                    })
                    .cloned()
                    .collect();
                if !types.is_empty() {
                    // Every type of that name at once (they share it); the
                    // nearest definitions win.
                    let found = self.methods_of_type(&row.file, recv, "", name)?;
                    if !found.is_empty() {
                        return Ok(Some(Found::exact(found)));
                    }
                }
                if path_call {
                    // Through a type the repository does not define
                    // (`Vec::new`): outside. Through a module path
                    // (`helpers::f`, `std::cmp::max`): its functions.
                    if recv.starts_with(char::is_uppercase) {
                        return Ok(None);
                    }
                    return self.by_name_only(&row.file, name, false);
                }
            }
            return self.by_name_only(&row.file, name, true);
        }
        if let Some(decided) = self.name_through_import(row)? {
            return Ok(decided);
        }
        // Visible in the same file: top level, or in an enclosing scope.
        let groups = self.groups(name)?;
        let package_scoped = matches!(self.t.langs.get(&row.file), Some(Lang::Go | Lang::Java));
        let in_scope: Vec<&Arc<Sym>> = if package_scoped {
            groups
                .by_file
                .iter()
                .filter(|(file, _)| self.same_scope_file(&row.file, file))
                .flat_map(|(_, defs)| defs.iter())
                .collect()
        } else {
            groups
                .by_file
                .get(&row.file)
                .into_iter()
                .flatten()
                .collect()
        };
        let visible: Vec<String> = in_scope
            .into_iter()
            .filter(|s| callable(&s.kind, false))
            .filter(|s| match &s.parent {
                None => true,
                Some(p) => ancestors.iter().any(|a| &a.id == p),
            })
            .map(|s| s.id.clone())
            .collect();
        if !visible.is_empty() {
            return Ok(Some(Found::exact(visible)));
        }
        self.by_name_only(&row.file, name, false)
    }

    pub(super) fn by_name_only(
        &mut self,
        from: &str,
        name: &str,
        has_receiver: bool,
    ) -> rusqlite::Result<Option<Found>> {
        let key = (name.to_owned(), has_receiver, self.family(from));
        let found = match self.by_name_cache.get(&key) {
            Some(found) => found.clone(),
            None => {
                let mut found: Vec<String> = self
                    .named(name)?
                    .iter()
                    .filter(|s| callable(&s.kind, has_receiver) && self.same_family(from, &s.file))
                    .map(|s| s.id.clone())
                    .collect();
                found.sort();
                let found = Arc::new(found);
                self.by_name_cache.insert(key, found.clone());
                found
            }
        };
        if found.len() < 2 {
            return Ok(Some(Found::listed(found.to_vec())));
        }
        // Several definitions share the name: one row stands for all of
        // them (queries expand it), so a popular name costs one row per
        // call, not one per candidate.
        let kind = if has_receiver { 'm' } else { 'f' };
        Ok(Some(Found {
            candidates: found.len(),
            targets: vec![format!("{AMBIGUOUS_PREFIX}{kind}:{name}")],
            exact: false,
        }))
    }

    /// Methods called `name` of the type `type_name` or of its bases
    /// (seen through the imports of the file that names them), three levels
    /// up, in the language family of `from`. Of several types sharing the
    /// name (every crate has an `Error`), the nearest win: the type `type_id`
    /// itself, else those whose file shares the longest directory prefix
    /// with `from`.
    pub(super) fn methods_of_type(
        &mut self,
        from: &str,
        type_name: &str,
        type_id: &str,
        name: &str,
    ) -> rusqlite::Result<Vec<String>> {
        let groups = self.groups(name)?;
        let mut types = vec![type_name.to_owned()];
        let mut seen = HashSet::new();
        for level in 0..3 {
            let mut found: Vec<&Arc<Sym>> = Vec::new();
            for tname in &types {
                for m in groups.by_type.get(tname).into_iter().flatten() {
                    if self.same_family(from, &m.file) {
                        found.push(m);
                    }
                }
            }
            if !found.is_empty() {
                let own: Vec<String> = found
                    .iter()
                    .filter(|m| level == 0 && m.parent.as_deref() == Some(type_id))
                    .map(|m| m.id.clone())
                    .collect();
                if !own.is_empty() {
                    return Ok(own);
                }
                return Ok(nearest(from, found));
            }
            // The bases of the type: of its nearest definitions (a Rust
            // struct and its impls), and of `type_id` itself.
            let mut next = Vec::new();
            for tname in &types {
                if !seen.insert(tname.clone()) {
                    continue;
                }
                let all: Vec<Arc<Sym>> = self
                    .named(tname)?
                    .iter()
                    .filter(|s| {
                        TYPE_KINDS.contains(&s.kind.as_str()) && self.same_family(from, &s.file)
                    })
                    .cloned()
                    .collect();
                let near: HashSet<String> =
                    nearest(from, all.iter().collect()).into_iter().collect();
                let mut defs: Vec<Arc<Sym>> =
                    all.into_iter().filter(|s| near.contains(&s.id)).collect();
                if level == 0 {
                    defs.extend(self.sym(type_id)?);
                }
                for def in defs {
                    for base in self.bases_of(&def.id)? {
                        // `class C(S)` where `from .base import Shape as S`
                        let real = match self.import_binding(&def.file, &base)? {
                            Some(import) => import.name.clone().unwrap_or(base),
                            None => base,
                        };
                        next.push(real);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            next.sort();
            next.dedup();
            types = next;
        }
        Ok(Vec::new())
    }

    /// Definitions called `name` in `files`: at top level, or directly in
    /// a type called `holder` (a Java class imported by name).
    pub(super) fn defined_in(
        &mut self,
        files: &[String],
        name: &str,
        holder: Option<&str>,
    ) -> rusqlite::Result<Vec<String>> {
        let mut out = Vec::new();
        let groups = self.groups(name)?;
        for s in files.iter().filter_map(|f| groups.by_file.get(f)).flatten() {
            let ok = match &s.parent {
                None => true,
                Some(p) => match (holder, self.sym(p)?) {
                    (Some(h), Some(parent)) => parent.name == h && parent.parent.is_none(),
                    _ => false,
                },
            };
            if ok {
                out.push(s.id.clone());
            }
        }
        out.sort();
        Ok(out)
    }

    /// The import of `file` that binds `local`, if any.
    pub(super) fn import_binding(
        &mut self,
        file: &str,
        local: &str,
    ) -> rusqlite::Result<Option<Bound>> {
        let imports = self.imports_of(file)?;
        let found = imports
            .iter()
            .rposition(|i| i.local.as_deref() == Some(local));
        Ok(found.map(|at| Bound(imports, at)))
    }

    pub(super) fn import_target(
        &mut self,
        file: &str,
        import: &ImportRow,
    ) -> rusqlite::Result<Arc<Target>> {
        if let Some(t) = self.targets.get(&import.id) {
            return Ok(t.clone());
        }
        let target = Arc::new(match self.t.langs.get(file) {
            Some(&lang) => module_files(
                lang,
                file,
                &import.module,
                import.name.as_deref(),
                &self.t.langs,
                &self.t.by_tail,
            ),
            None => Target::Unknown,
        });
        self.targets.insert(import.id, target.clone());
        Ok(target)
    }

    /// Definitions called `name` in the module `import` brings in (at top
    /// level, or directly in a type called `holder`).
    pub(super) fn through(
        &mut self,
        file: &str,
        import: &ImportRow,
        name: &str,
        holder: Option<&str>,
    ) -> rusqlite::Result<Through> {
        Ok(match &*self.import_target(file, import)? {
            Target::Files(files) => {
                let found = self.defined_in(files, name, holder)?;
                if found.is_empty() {
                    Through::Missing
                } else {
                    Through::Found(found)
                }
            }
            Target::External => Through::External,
            Target::Unknown => Through::Unknown,
        })
    }

    /// A call through a module (`alias.f()`, `a.b.f()`): found there, no
    /// edge when the module does not have it or is outside, by name when it
    /// could not be placed.
    pub(super) fn call_through_module(
        &mut self,
        row: &RefRow,
        import: &ImportRow,
        holder: Option<&str>,
    ) -> rusqlite::Result<Option<Found>> {
        match self.through(&row.file, import, &row.name, holder)? {
            Through::Found(found) => Ok(Some(Found::exact(found))),
            Through::Missing | Through::External => Ok(None),
            Through::Unknown => self.by_name_only(&row.file, &row.name, true),
        }
    }

    /// A name bound by an import of the file: found in the module, or
    /// `Some(None)` (no edge) when the module is outside; `None` to go on
    /// looking.
    pub(super) fn name_through_import(
        &mut self,
        row: &RefRow,
    ) -> rusqlite::Result<Option<Option<Found>>> {
        let Some(import) = self.import_binding(&row.file, &row.name)? else {
            return Ok(None);
        };
        let wanted = import.name.clone().unwrap_or_else(|| row.name.clone());
        Ok(match self.through(&row.file, &import, &wanted, None)? {
            Through::Found(found) => Some(Some(Found::exact(found))),
            Through::External => Some(None),
            Through::Missing | Through::Unknown => None,
        })
    }

    pub(super) fn resolve_base(&mut self, row: &RefRow) -> rusqlite::Result<Option<Found>> {
        let name = row.name.as_str();
        if let Some(decided) = self.name_through_import(row)? {
            return Ok(decided);
        }
        let types: Vec<Arc<Sym>> = self
            .named(name)?
            .iter()
            .filter(|s| TYPE_KINDS.contains(&s.kind.as_str()) && s.kind != "impl")
            .cloned()
            .collect();
        let same_file: Vec<String> = types
            .iter()
            .filter(|s| s.file == row.file)
            .map(|s| s.id.clone())
            .collect();
        if !same_file.is_empty() {
            return Ok(Some(Found::exact(same_file)));
        }
        Ok(Some(Found::listed(
            types.iter().map(|s| s.id.clone()).collect(),
        )))
    }

    pub(super) fn resolve_import(
        &mut self,
        row: &ImportRow,
        out: &mut Vec<EdgeRow>,
    ) -> rusqlite::Result<()> {
        let target = self.import_target(&row.file, row)?;
        let Target::Files(files) = &*target else {
            return Ok(());
        };
        let mut dsts = Vec::new();
        if let Some(name) = &row.name {
            dsts = self.defined_in(files, name, None)?;
        }
        if dsts.is_empty() {
            dsts = files.clone();
        }
        let k = dsts.len();
        for dst in dsts.into_iter().take(MAX_CANDIDATES) {
            out.push(EdgeRow {
                origin: row.id,
                kind: "imports",
                src: row.file.clone(),
                dst,
                confidence: if k == 1 { "exact" } else { "ambiguous" },
                candidates: k,
                line: row.line,
            });
        }
        Ok(())
    }
}

/// The ids of the definitions whose files share the longest directory
/// prefix with `from` (the same file first, then the same package...).
pub(super) fn nearest(from: &str, defs: Vec<&Arc<Sym>>) -> Vec<String> {
    let shared = |file: &str| -> usize {
        if file == from {
            return usize::MAX;
        }
        from.split('/')
            .zip(file.split('/'))
            .take_while(|(a, b)| a == b)
            .count()
    };
    let best = defs.iter().map(|d| shared(&d.file)).max().unwrap_or(0);
    let mut out: Vec<String> = defs
        .into_iter()
        .filter(|d| shared(&d.file) == best)
        .map(|d| d.id.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Kinds a call can land on by name: with a receiver, methods (a module's
/// functions are reached through its import); without, functions, types
/// (constructors) and macros.
pub(super) fn callable(kind: &str, has_receiver: bool) -> bool {
    marker_kinds(if has_receiver { 'm' } else { 'f' }).contains(&kind)
}

/// The last simple name of a receiver expression: `self` for `self`,
/// `path` for `os.path`, `Foo` for `crate::x::Foo`.
pub(super) fn simple_receiver(receiver: &str) -> &str {
    let r = receiver.trim().trim_end_matches(':');
    if r == "super()" {
        return r;
    }
    r.rsplit(['.', ':', '>']).next().unwrap_or(r).trim()
}

/// The repository files an import names.
/// The last `parts` parts of a `/`-separated path (the whole of a
/// shorter one).
pub(super) fn tail(path: &str, parts: usize) -> &str {
    match path.rmatch_indices('/').nth(parts - 1) {
        Some((at, _)) => &path[at + 1..],
        None => path,
    }
}
