//! What a Python project's tests need, read from every place projects
//! declare it, as a person setting the project up reads them: the
//! project's test extras, PEP 735 dependency groups, Poetry's, PDM's and
//! Hatch's development groups and environments, tox's `deps` and `extras`
//! (`tox.ini`, `setup.cfg`'s `[tox:tox]`, `pyproject.toml`'s `[tool.tox]`),
//! nox sessions (read, never run), requirement files, and Pipfile's
//! `[dev-packages]`.
//!
//! Groups named for tests (`test`, `tests`, `testing`, …) are taken; a
//! `dev` group only where no source names one for tests (dev groups carry
//! linters and doc builders the tests do not need). Every source used is
//! named, with what it gave, in the stack's `declared`.

use std::path::Path;

use toml::{Table, Value};

use super::{entries, read, section};

/// What a project declares its tests need, and where.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Declared {
    /// Extras of the project itself, installed with it (`.[test]`).
    pub extras: Vec<String>,
    /// Requirements (`pytest<9`, `PyYAML`).
    pub requirements: Vec<String>,
    /// Requirement files, relative to the repository.
    pub files: Vec<String>,
    /// Each source used and what it gave: `pyproject.toml
    /// [dependency-groups] test: pytest, pyyaml`.
    pub sources: Vec<String>,
    /// The source that declares pytest, if one does.
    pub pytest: Option<String>,
    /// What development groups, files and requirements declare where no
    /// source names the tests' (`[dependency-groups] dev`,
    /// `requirements/development.txt`): linters and doc builders as often
    /// as the tests' needs, so installed only when the tests miss a
    /// module (the gate's `dev_dependencies` retry).
    pub dev: Option<Box<Declared>>,
}

/// How strongly a group's name says it is the tests'.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fit {
    /// `dev`, `develop`, `development`: the tests' often, with more.
    Dev,
    /// `test`, `tests`, `testing`, `test-*`, `*-test`, `hatch-test`.
    Test,
}

fn fit(name: &str) -> Option<Fit> {
    let n = name.to_ascii_lowercase().replace('_', "-");
    let test = matches!(
        n.as_str(),
        "test" | "tests" | "testing" | "hatch-test" | "pytest"
    ) || n.starts_with("test-")
        || n.starts_with("tests-")
        || n.ends_with("-test")
        || n.ends_with("-tests");
    if test {
        Some(Fit::Test)
    } else if matches!(n.as_str(), "dev" | "develop" | "development") {
        Some(Fit::Dev)
    } else {
        None
    }
}

/// One finding: a source's name, its fit, and what it gives.
#[derive(Debug, Default)]
struct Found {
    source: String,
    fit: Option<Fit>,
    extras: Vec<String>,
    requirements: Vec<String>,
    files: Vec<String>,
}

impl Found {
    fn new(source: impl Into<String>, fit: Option<Fit>) -> Found {
        Found {
            source: source.into(),
            fit,
            ..Found::default()
        }
    }

    fn is_empty(&self) -> bool {
        self.extras.is_empty() && self.requirements.is_empty() && self.files.is_empty()
    }

    /// A requirement line of a tox `deps`, nox `install` or dependency
    /// list: `-r FILE` a file, `.[x]` or the project's own name with extras
    /// its extras, the project itself and options skipped.
    fn line(&mut self, line: &str, project: Option<&str>) {
        let line = line.split(" #").next().unwrap_or(line).trim();
        let line = line.strip_prefix("{toxinidir}/").unwrap_or(line);
        if let Some(file) = line
            .strip_prefix("--requirement")
            .or_else(|| line.strip_prefix("-r"))
        {
            let file = file.trim_start_matches('=').trim();
            let file = file.strip_prefix("{toxinidir}/").unwrap_or(file);
            if !file.is_empty() && !file.contains('{') {
                self.files.push(file.to_owned());
            }
            return;
        }
        if line.is_empty() || line.starts_with('-') || line.contains('{') || line.contains("://") {
            return; // options, constraints, substitutions left, URLs
        }
        let (name, extras) = name_and_extras(line);
        let own = name == "." || project.is_some_and(|p| normalized(p) == normalized(name));
        if own {
            self.extras.extend(extras);
        } else if !name.starts_with('.') && !name.starts_with('/') {
            self.requirements.push(line.to_owned());
        }
    }
}

/// A requirement's name and extras: `pkg[a,b]>=1` → (`pkg`, [a, b]).
fn name_and_extras(requirement: &str) -> (&str, Vec<String>) {
    let end = requirement
        .find(|c: char| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(requirement.len());
    let name = &requirement[..end];
    let extras = requirement[end..]
        .trim_start()
        .strip_prefix('[')
        .and_then(|rest| rest.split_once(']'))
        .map(|(list, _)| {
            list.split(',')
                .map(|e| e.trim().to_owned())
                .filter(|e| !e.is_empty())
                .collect()
        })
        .unwrap_or_default();
    (name, extras)
}

/// A package name as PyPI compares them.
fn normalized(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '.'], "-")
}

/// Everything the project declares its tests need.
pub(crate) fn declared(root: &Path) -> Declared {
    let pyproject: Table = read(root, "pyproject.toml")
        .and_then(|t| t.parse().ok())
        .unwrap_or_default();
    let project = path(&pyproject, &["project", "name"])
        .or_else(|| path(&pyproject, &["tool", "poetry", "name"]))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let project = project.as_deref();
    let mut found = Vec::new();
    extras(root, &pyproject, &mut found);
    dependency_groups(&pyproject, project, &mut found);
    poetry(&pyproject, &mut found);
    pdm(&pyproject, project, &mut found);
    hatch(&pyproject, project, &mut found);
    tox(root, &pyproject, project, &mut found);
    nox(root, project, &mut found);
    pipfile(root, &mut found);
    requirement_files(root, &mut found);
    merge(found)
}

/// The findings that fit best (a `dev` group only where nothing names the
/// tests), merged; each requirement once by name, a constrained one
/// before a bare one.
fn merge(found: Vec<Found>) -> Declared {
    let found: Vec<Found> = found.into_iter().filter(|f| !f.is_empty()).collect();
    let best = found.iter().filter_map(|f| f.fit).max();
    let mut out = Declared::default();
    let mut dev = Declared::default();
    for f in found
        .into_iter()
        .filter(|f| f.fit.is_none() || f.fit == best)
    {
        // A dev extra is installed with the project, as it always was; dev
        // groups and files wait until the tests miss a module.
        let waits = f.fit == Some(Fit::Dev) && (!f.files.is_empty() || !f.requirements.is_empty());
        if waits {
            dev.add(f);
        } else {
            out.add(f);
        }
    }
    if dev != Declared::default() {
        out.dev = Some(Box::new(dev));
    }
    out
}

impl Declared {
    /// `f`'s findings, each once; its source named.
    fn add(&mut self, f: Found) {
        let out = self;
        let mut gave: Vec<String> = f.extras.iter().map(|e| format!(".[{e}]")).collect();
        gave.extend(f.files.iter().map(|r| format!("-r {r}")));
        gave.extend(f.requirements.iter().cloned());
        out.sources
            .push(format!("{}: {}", f.source, gave.join(", ")));
        for e in f.extras {
            if !out.extras.contains(&e) {
                out.extras.push(e);
            }
        }
        for r in f.files {
            if !out.files.contains(&r) {
                out.files.push(r);
            }
        }
        for r in f.requirements {
            let name = normalized(name_and_extras(&r).0);
            if name == "pytest" && out.pytest.is_none() {
                out.pytest = Some(f.source.clone());
            }
            match out
                .requirements
                .iter()
                .position(|o| normalized(name_and_extras(o).0) == name)
            {
                Some(i) if out.requirements[i].len() < r.len() => out.requirements[i] = r,
                Some(_) => {}
                None => out.requirements.push(r),
            }
        }
    }
}

fn path<'t>(table: &'t Table, keys: &[&str]) -> Option<&'t Value> {
    let (first, rest) = keys.split_first()?;
    rest.iter()
        .try_fold(table.get(*first)?, |value, key| value.get(*key))
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The project's own extras named for tests: `[project.optional-
/// dependencies]`, Poetry's `[tool.poetry.extras]`, setup.cfg's
/// `[options.extras_require]`, setup.py's `extras_require` keys. Only for a
/// project pip installs.
fn extras(root: &Path, pyproject: &Table, found: &mut Vec<Found>) {
    let tables = [
        (
            "[project.optional-dependencies]",
            &["project", "optional-dependencies"][..],
        ),
        ("[tool.poetry.extras]", &["tool", "poetry", "extras"][..]),
    ];
    for (name, keys) in tables {
        if let Some(t) = path(pyproject, keys).and_then(Value::as_table) {
            for key in t.keys() {
                let mut f = Found::new(format!("pyproject.toml {name} {key}"), fit(key));
                if f.fit.is_some() {
                    f.extras.push(key.clone());
                    found.push(f);
                }
            }
        }
    }
    if let Some(body) =
        read(root, "setup.cfg").and_then(|c| section(&c, "[options.extras_require]"))
    {
        for (key, _) in entries(&body) {
            let mut f = Found::new(
                format!("setup.cfg [options.extras_require] {key}"),
                fit(key),
            );
            if f.fit.is_some() {
                f.extras.push(key.to_owned());
                found.push(f);
            }
        }
    }
    if let Some(setup) = read(root, "setup.py").filter(|s| s.contains("extras_require")) {
        for key in ["test", "tests", "testing", "dev"] {
            let quoted = [format!("\"{key}\""), format!("'{key}'")];
            let keyed = quoted.iter().any(|q| {
                setup
                    .match_indices(q.as_str())
                    .any(|(at, _)| setup[at + q.len()..].trim_start().starts_with(':'))
            }) || setup.contains(&format!("{key}=["));
            if keyed {
                let mut f = Found::new(format!("setup.py extras_require {key}"), fit(key));
                f.extras.push(key.to_owned());
                found.push(f);
            }
        }
    }
}

/// PEP 735 `[dependency-groups]`, with `{include-group = "…"}` followed.
fn dependency_groups(pyproject: &Table, project: Option<&str>, found: &mut Vec<Found>) {
    let Some(groups) = pyproject.get("dependency-groups").and_then(Value::as_table) else {
        return;
    };
    for (name, _) in groups {
        let Some(fitness) = fit(name) else { continue };
        let mut f = Found::new(
            format!("pyproject.toml [dependency-groups] {name}"),
            Some(fitness),
        );
        let mut seen = vec![name.clone()];
        let mut queue = vec![name.clone()];
        while let Some(group) = queue.pop() {
            for item in groups
                .get(&group)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match item {
                    Value::String(r) => f.line(r, project),
                    Value::Table(t) => {
                        if let Some(inc) = t.get("include-group").and_then(Value::as_str) {
                            if !seen.iter().any(|s| s == inc) {
                                seen.push(inc.to_owned());
                                queue.push(inc.to_owned());
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        found.push(f);
    }
}

/// A Poetry dependency (`^1.2`, `{version = "~2", extras = [...]}`) as a
/// requirement pip reads; None for the interpreter itself and what pip
/// cannot fetch from an index (paths, git, URLs).
fn poetry_requirement(name: &str, spec: &Value) -> Option<String> {
    if name.eq_ignore_ascii_case("python") {
        return None;
    }
    let (version, extras) = match spec {
        // Several constraints by Python version: the newest's is unknown.
        Value::Array(_) => ("*", Vec::new()),
        _ => version_and_extras(spec)?,
    };
    Some(requirement(name, &extras, &poetry_version(version)))
}

/// A dependency table's entry — `"^1.2"`, or `{version = "…", extras =
/// […]}` — as its version text (`*` when it names none) and extras; None
/// for what pip cannot fetch from an index (a path, git, a URL, a file)
/// and for other shapes.
fn version_and_extras(spec: &Value) -> Option<(&str, Vec<String>)> {
    match spec {
        Value::String(v) => Some((v.as_str(), Vec::new())),
        Value::Table(t)
            if !["path", "git", "url", "file"]
                .iter()
                .any(|k| t.contains_key(*k)) =>
        {
            Some((
                t.get("version").and_then(Value::as_str).unwrap_or("*"),
                strings(t.get("extras")),
            ))
        }
        _ => None,
    }
}

/// `name[extras]version`, as pip reads it.
fn requirement(name: &str, extras: &[String], version: &str) -> String {
    if extras.is_empty() {
        format!("{name}{version}")
    } else {
        format!("{name}[{}]{version}", extras.join(","))
    }
}

/// A Poetry version constraint in PEP 440: `^1.2.3` → `>=1.2.3,<2`,
/// `~1.2` → `>=1.2,<1.3`, `1.2` → `==1.2`, `*` → nothing; an `||` of
/// constraints leaves it unconstrained.
fn poetry_version(version: &str) -> String {
    let v = version.trim();
    if v.is_empty() || v == "*" || v.contains("||") || v.contains('|') {
        return String::new();
    }
    let parts = |s: &str| -> Vec<u64> { s.split('.').map_while(|p| p.parse().ok()).collect() };
    let join = |p: &[u64]| p.iter().map(u64::to_string).collect::<Vec<_>>().join(".");
    if let Some(rest) = v.strip_prefix('^') {
        let p = parts(rest.trim());
        if p.is_empty() {
            return String::new();
        }
        // The leftmost non-zero part is bumped; a lone 0 allows below 1.
        let bump = p.iter().position(|&x| x != 0).unwrap_or(p.len() - 1);
        let mut upper = p[..=bump].to_vec();
        upper[bump] += 1;
        return format!(">={},<{}", join(&p), join(&upper));
    }
    if let Some(rest) = v.strip_prefix('~').filter(|r| !r.starts_with('=')) {
        let p = parts(rest.trim());
        if p.is_empty() {
            return String::new();
        }
        let keep = if p.len() == 1 { 1 } else { 2 };
        let mut upper = p[..keep].to_vec();
        upper[keep - 1] += 1;
        return format!(">={},<{}", join(&p), join(&upper));
    }
    if v.starts_with(|c: char| c.is_ascii_digit()) {
        return if v.contains('*') {
            format!("=={v}")
        } else if v.contains(',') {
            v.replace(' ', "")
        } else {
            format!("=={v}")
        };
    }
    v.replace(' ', "")
}

/// Poetry's `[tool.poetry.dev-dependencies]` and
/// `[tool.poetry.group.NAME.dependencies]`.
fn poetry(pyproject: &Table, found: &mut Vec<Found>) {
    let mut add = |source: String, fitness: Option<Fit>, deps: &Table| {
        let mut f = Found::new(source, fitness);
        f.requirements
            .extend(deps.iter().filter_map(|(n, s)| poetry_requirement(n, s)));
        found.push(f);
    };
    if let Some(deps) =
        path(pyproject, &["tool", "poetry", "dev-dependencies"]).and_then(Value::as_table)
    {
        // The tests' more often than not: Poetry's only group before 1.2.
        add(
            "pyproject.toml [tool.poetry.dev-dependencies]".to_owned(),
            Some(Fit::Test),
            deps,
        );
    }
    if let Some(groups) = path(pyproject, &["tool", "poetry", "group"]).and_then(Value::as_table) {
        for (name, group) in groups {
            let deps = group.get("dependencies").and_then(Value::as_table);
            if let (Some(fitness), Some(deps)) = (fit(name), deps) {
                add(
                    format!("pyproject.toml [tool.poetry.group.{name}.dependencies]"),
                    Some(fitness),
                    deps,
                );
            }
        }
    }
}

/// PDM's `[tool.pdm.dev-dependencies]` (and its newer home, PEP 735's).
fn pdm(pyproject: &Table, project: Option<&str>, found: &mut Vec<Found>) {
    let Some(groups) =
        path(pyproject, &["tool", "pdm", "dev-dependencies"]).and_then(Value::as_table)
    else {
        return;
    };
    for (name, list) in groups {
        let Some(fitness) = fit(name) else { continue };
        let mut f = Found::new(
            format!("pyproject.toml [tool.pdm.dev-dependencies] {name}"),
            Some(fitness),
        );
        for r in strings(Some(list)) {
            f.line(&r, project);
        }
        found.push(f);
    }
}

/// Hatch's environments: `default` (what `hatch run` uses) fits as dev,
/// test-named ones and `hatch-test` as the tests'; their `dependencies`,
/// `extra-dependencies` and `features` (extras).
fn hatch(pyproject: &Table, project: Option<&str>, found: &mut Vec<Found>) {
    let Some(envs) = path(pyproject, &["tool", "hatch", "envs"]).and_then(Value::as_table) else {
        return;
    };
    for (name, env) in envs {
        let fitness = if name == "default" {
            Some(Fit::Dev)
        } else {
            fit(name)
        };
        let Some(fitness) = fitness else { continue };
        let mut f = Found::new(
            format!("pyproject.toml [tool.hatch.envs.{name}]"),
            Some(fitness),
        );
        for key in ["dependencies", "extra-dependencies"] {
            for r in strings(env.get(key)) {
                f.line(&r, project);
            }
        }
        f.extras.extend(strings(env.get("features")));
        found.push(f);
    }
}

/// tox's test environment: `tox.ini`, or `setup.cfg` with `[tox:tox]`, or
/// `pyproject.toml`'s `[tool.tox]` (its `legacy_tox_ini`, or the native
/// `env_run_base`): `deps` (lines, `-r` files, `{[section]deps}`
/// substitutions followed; factor-conditional lines left out) and
/// `extras`.
fn tox(root: &Path, pyproject: &Table, project: Option<&str>, found: &mut Vec<Found>) {
    let ini = read(root, "tox.ini")
        .map(|t| ("tox.ini", t))
        .or_else(|| {
            read(root, "setup.cfg")
                .filter(|c| c.lines().any(|l| l.trim() == "[tox:tox]"))
                .map(|c| ("setup.cfg", c))
        })
        .or_else(|| {
            path(pyproject, &["tool", "tox", "legacy_tox_ini"])
                .and_then(Value::as_str)
                .map(|t| ("pyproject.toml [tool.tox] legacy_tox_ini", t.to_owned()))
        });
    if let Some((file, text)) = ini {
        let Some(body) = section(&text, "[testenv]") else {
            return;
        };
        let mut f = Found::new(format!("{file} [testenv]"), None);
        for line in tox_lines(&text, &value_lines(&body, "deps").unwrap_or_default(), 0) {
            f.line(&line, project);
        }
        for line in value_lines(&body, "extras").unwrap_or_default() {
            let names = match factored(&line) {
                Some((factors, rest)) if factors.iter().any(|f| TEST_FACTORS.contains(f)) => rest,
                Some(_) => continue,
                None => line.as_str(),
            };
            f.extras.extend(
                names
                    .split([',', ' '])
                    .map(str::trim)
                    .filter(|e| !e.is_empty())
                    .map(str::to_owned),
            );
        }
        found.push(f);
    } else if let Some(base) = path(pyproject, &["tool", "tox", "env_run_base"]) {
        let mut f = Found::new("pyproject.toml [tool.tox.env_run_base]", None);
        for r in strings(base.get("deps")) {
            f.line(&r, project);
        }
        f.extras.extend(strings(base.get("extras")));
        found.push(f);
    }
}

/// The lines of INI key `key` in a section's text: what follows `=` and
/// the indented lines after it, comments dropped.
fn value_lines(body: &str, key: &str) -> Option<Vec<String>> {
    let mut lines = body.lines();
    let first = lines.by_ref().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (!l.starts_with(char::is_whitespace) && k.trim() == key).then_some(v)
    })?;
    let mut out = vec![first.to_owned()];
    out.extend(
        lines
            .take_while(|l| l.starts_with(char::is_whitespace) || l.trim().is_empty())
            .map(str::to_owned),
    );
    Some(
        out.into_iter()
            .map(|l| l.split('#').next().unwrap_or_default().trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect(),
    )
}

/// A tox `deps` value's requirement lines: `{[section]key}` replaced by
/// that section's value, factor-conditional `py38: x` lines left out.
fn tox_lines(text: &str, lines: &[String], depth: usize) -> Vec<String> {
    let mut out = Vec::new();
    for line in lines {
        if let Some(inner) = line.strip_prefix("{[").and_then(|w| w.strip_suffix('}')) {
            let lines = inner
                .split_once(']')
                .and_then(|(sec, key)| value_lines(&section(text, &format!("[{sec}]"))?, key));
            if let (Some(lines), true) = (lines, depth < 3) {
                out.extend(tox_lines(text, &lines, depth + 1));
            }
            continue;
        }
        match factored(line) {
            // A test environment's factor (`unit: pytest`): the tests'.
            Some((factors, rest)) if factors.iter().any(|f| TEST_FACTORS.contains(f)) => {
                out.push(rest.to_owned());
            }
            Some(_) => {}
            None => out.push(line.clone()),
        }
    }
    out
}

/// tox factors that name a test environment.
const TEST_FACTORS: [&str; 6] = ["unit", "units", "test", "tests", "testing", "pytest"];

/// A factor-conditional tox line (`py38,unit-!pypy: x`): its positive
/// factors and what follows; None for a plain line.
fn factored(line: &str) -> Option<(Vec<&str>, &str)> {
    let (head, rest) = line.split_once(':')?;
    let factor_chars =
        |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | ',' | '!' | '.' | ' ' | '{' | '}');
    if rest.starts_with("//") || !head.chars().all(factor_chars) {
        return None;
    }
    let factors = head
        .split([',', '-', ' '])
        .map(str::trim)
        .filter(|f| !f.is_empty() && !f.starts_with('!'))
        .collect();
    Some((factors, rest.trim()))
}

/// nox sessions named for tests, read (never run): the string arguments
/// of their `session.install(...)` calls.
fn nox(root: &Path, project: Option<&str>, found: &mut Vec<Found>) {
    let Some(text) = read(root, "noxfile.py") else {
        return;
    };
    let mut f = Found::new("noxfile.py", Some(Fit::Test));
    let mut in_test = false;
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(def) = line.strip_prefix("def ") {
            in_test = fit(def.split('(').next().unwrap_or_default())
                .is_some_and(|x| x == Fit::Test)
                || def.starts_with("test");
        } else if !line.starts_with(char::is_whitespace)
            && !line.trim().is_empty()
            && !line.starts_with('@')
        {
            in_test = false;
        }
        if in_test && line.contains("session.install(") {
            // The call, to its closing parenthesis.
            let mut call = line[line.find("session.install(").unwrap_or(0)..].to_owned();
            while call.matches('(').count() > call.matches(')').count() && i + 1 < lines.len() {
                i += 1;
                call.push_str(lines[i]);
            }
            let mut args = string_literals(&call).into_iter();
            while let Some(arg) = args.next() {
                if arg == "-r" || arg == "--requirement" {
                    if let Some(file) = args.next() {
                        f.files.push(file);
                    }
                } else if arg == "-e" {
                    continue;
                } else {
                    f.line(&arg, project);
                }
            }
        }
        i += 1;
    }
    found.push(f);
}

/// The contents of the string literals in `code` (`"…"` or `'…'`).
fn string_literals(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = code.chars();
    while let Some(c) = chars.next() {
        if c == '"' || c == '\'' {
            let s: String = chars.by_ref().take_while(|&d| d != c).collect();
            out.push(s);
        }
    }
    out
}

/// Pipfile's `[dev-packages]`.
fn pipfile(root: &Path, found: &mut Vec<Found>) {
    let Some(pipfile) = read(root, "Pipfile").and_then(|t| t.parse::<Table>().ok()) else {
        return;
    };
    let Some(dev) = pipfile.get("dev-packages").and_then(Value::as_table) else {
        return;
    };
    let mut f = Found::new("Pipfile [dev-packages]", Some(Fit::Test));
    for (name, spec) in dev {
        let Some((version, extras)) = version_and_extras(spec) else {
            continue;
        };
        let version = if version == "*" { "" } else { version };
        f.requirements.push(requirement(name, &extras, version));
    }
    found.push(f);
}

/// Requirement files for the tests: `requirements*test*.txt`,
/// `test*requirements*.txt` at the top and `*test*.txt` in
/// `requirements/` (for the tests); `requirements*dev*.txt`,
/// `dev*requirements*.txt` there too (dev); any `requirements*.txt` in
/// `tests/` or `test/` (where other `.txt` files are test data).
fn requirement_files(root: &Path, found: &mut Vec<Found>) {
    for (dir, any) in [
        ("", false),
        ("requirements", false),
        ("tests", true),
        ("test", true),
    ] {
        let Ok(list) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut names: Vec<String> = list
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".txt"))
            .collect();
        names.sort();
        for n in names {
            let lower = n.to_ascii_lowercase();
            let listed = dir == "requirements" || lower.contains("requirements");
            let fitness = if any && lower.starts_with("requirements") {
                Some(Fit::Test)
            } else if !listed {
                None
            } else if lower.contains("test") {
                Some(Fit::Test)
            } else if lower.contains("dev") {
                Some(Fit::Dev)
            } else {
                None
            };
            let file = if dir.is_empty() {
                n
            } else {
                format!("{dir}/{n}")
            };
            if fitness.is_some() {
                let mut f = Found::new(file.clone(), fitness);
                f.files.push(file);
                found.push(f);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, Declared) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let d = declared(dir.path());
        (dir, d)
    }

    #[test]
    fn poetry_dev_dependencies_become_requirements_pip_reads() {
        let (_d, got) = project(&[(
            "pyproject.toml",
            "[tool.poetry]\nname = \"thing\"\n\n[tool.poetry.dependencies]\npython = \"^3.8\"\nclick = \"^8\"\n\n\
             [tool.poetry.dev-dependencies]\npytest = \"^7.1.2\"\nPyYAML = \"*\"\ncoverage = {version = \"~6.4\", extras = [\"toml\"]}\nlocal = {path = \"../local\"}\n",
        )]);
        assert_eq!(
            got.requirements,
            ["PyYAML", "coverage[toml]>=6.4,<6.5", "pytest>=7.1.2,<8"]
        );
        assert_eq!(
            got.sources,
            ["pyproject.toml [tool.poetry.dev-dependencies]: PyYAML, coverage[toml]>=6.4,<6.5, pytest>=7.1.2,<8"]
        );
    }

    #[test]
    fn poetry_constraints_read_as_pep_440() {
        assert_eq!(poetry_version("^1.2.3"), ">=1.2.3,<2");
        assert_eq!(poetry_version("^0.2.3"), ">=0.2.3,<0.3");
        assert_eq!(poetry_version("^0.0.3"), ">=0.0.3,<0.0.4");
        assert_eq!(poetry_version("^0"), ">=0,<1");
        assert_eq!(poetry_version("~1.2.3"), ">=1.2.3,<1.3");
        assert_eq!(poetry_version("~1"), ">=1,<2");
        assert_eq!(poetry_version("1.2"), "==1.2");
        assert_eq!(poetry_version("1.2.*"), "==1.2.*");
        assert_eq!(poetry_version(">= 1.0, < 2.0"), ">=1.0,<2.0");
        assert_eq!(poetry_version("^1 || ^2"), "");
        assert_eq!(poetry_version("*"), "");
    }

    #[test]
    fn a_test_group_is_taken_and_a_dev_group_only_where_none_names_the_tests() {
        let groups = "[project]\nname = \"thing\"\n\n[dependency-groups]\n\
                      test = [\"pytest>=8\", {include-group = \"typing\"}, \"thing[yaml]\"]\n\
                      typing = [\"typing-extensions\"]\ndev = [\"black\", {include-group = \"test\"}]\ndocs = [\"sphinx\"]\n";
        let (_d, got) = project(&[("pyproject.toml", groups)]);
        assert_eq!(got.requirements, ["pytest>=8", "typing-extensions"]);
        assert_eq!(got.extras, ["yaml"]);
        assert_eq!(
            got.sources,
            ["pyproject.toml [dependency-groups] test: .[yaml], pytest>=8, typing-extensions"]
        );
        // A dev group alone waits until the tests miss a module.
        let (_d, got) = project(&[(
            "pyproject.toml",
            "[dependency-groups]\ndev = [\"pytest\", \"black\"]\ndocs = [\"sphinx\"]\n",
        )]);
        assert!(got.requirements.is_empty(), "{got:?}");
        assert_eq!(got.dev.unwrap().requirements, ["pytest", "black"]);
    }

    #[test]
    fn tox_deps_extras_files_and_substitutions_are_followed() {
        let ini = "[tox]\nenvlist = py3\n\n[base]\ndeps =\n    hypothesis\n\n[testenv]\n\
                   deps =\n    pytest<9\n    -r requirements/test.txt\n    {[base]deps}\n    py38: mock\n    -c constraints.txt\n\
                   extras = diagrams, yaml\ncommands = pytest {posargs}\n";
        let (_d, got) = project(&[("tox.ini", ini)]);
        assert_eq!(got.requirements, ["pytest<9", "hypothesis"]);
        assert_eq!(got.files, ["requirements/test.txt"]);
        assert_eq!(got.extras, ["diagrams", "yaml"]);
        // A test environment's factors are the tests' (pyparsing's tox.ini
        // says `unit: pytest` and `extras = unit: diagrams`); a docs one's
        // and a Python version's are not.
        let (_d, got) = project(&[(
            "tox.ini",
            "[testenv]\ndeps =\n    unit: pytest\n    unit-!py315t: matplotlib; python_version <= '3.15'\n    doctest: sphinx\n\
             extras = unit: diagrams\n",
        )]);
        assert_eq!(
            got.requirements,
            ["pytest", "matplotlib; python_version <= '3.15'"]
        );
        assert_eq!(got.extras, ["diagrams"]);
        // The same in setup.cfg beside [tox:tox], and in pyproject.toml.
        let cfg = ini.replace("[tox]", "[tox:tox]");
        let (_d, got) = project(&[("setup.cfg", &cfg)]);
        assert_eq!(got.requirements, ["pytest<9", "hypothesis"]);
        assert!(
            got.sources[0].starts_with("setup.cfg [testenv]: "),
            "{got:?}"
        );
        let (_d, got) = project(&[(
            "pyproject.toml",
            "[tool.tox.env_run_base]\ndeps = [\"pytest<9\"]\nextras = [\"test\"]\n",
        )]);
        assert_eq!(
            (got.requirements, got.extras),
            (vec!["pytest<9".to_owned()], vec!["test".to_owned()])
        );
    }

    #[test]
    fn pdm_hatch_pipfile_and_nox_are_read() {
        let (_d, got) = project(&[(
            "pyproject.toml",
            "[project]\nname = \"thing\"\n[tool.pdm.dev-dependencies]\ntest = [\"pytest\", \"-e file:///${PROJECT_ROOT}/sub\"]\nlint = [\"ruff\"]\n",
        )]);
        assert_eq!(got.requirements, ["pytest"]);
        let (_d, got) = project(&[(
            "pyproject.toml",
            "[project]\nname = \"thing\"\n[tool.hatch.envs.default]\ndependencies = [\"coverage\"]\n\
             [tool.hatch.envs.hatch-test]\nextra-dependencies = [\"pytest-mock\"]\nfeatures = [\"cli\"]\n",
        )]);
        assert_eq!(
            (got.requirements, got.extras),
            (vec!["pytest-mock".to_owned()], vec!["cli".to_owned()])
        );
        let (_d, got) = project(&[(
            "Pipfile",
            "[packages]\nrequests = \"*\"\n\n[dev-packages]\npytest = \">=7\"\nresponses = {version = \"*\", extras = [\"x\"]}\n",
        )]);
        assert_eq!(got.requirements, ["pytest>=7", "responses[x]"]);
        let (_d, got) = project(&[(
            "noxfile.py",
            "import nox\n\n@nox.session\ndef lint(session):\n    session.install(\"ruff\")\n\n\
             @nox.session(python=[\"3.11\"])\ndef tests(session):\n    session.install(\n        \"pytest\", \"-r\", \"requirements-ci.txt\", \".[test]\"\n    )\n    session.run(\"pytest\")\n",
        )]);
        assert_eq!(got.requirements, ["pytest"]);
        assert_eq!(got.files, ["requirements-ci.txt"]);
        assert_eq!(got.extras, ["test"]);
    }

    #[test]
    fn requirement_files_for_tests_and_for_dev() {
        let (_d, got) = project(&[
            ("test-requirements.txt", "pytest\n"),
            ("requirements.txt", "click\n"),
            ("requirements-dev.txt", "black\n"),
            ("tests/requirements.txt", "pytest\n"),
            ("tests/data.txt", "x\n"),
        ]);
        assert_eq!(
            got.files,
            ["test-requirements.txt", "tests/requirements.txt"]
        );
        let (_d, got) = project(&[("requirements-dev.txt", "pytest\n")]);
        assert_eq!(got.dev.unwrap().files, ["requirements-dev.txt"]);
    }

    #[test]
    fn the_projects_own_test_extra_from_any_of_its_files() {
        let (_d, got) = project(&[(
            "pyproject.toml",
            "[project]\nname = \"thing\"\n[project.optional-dependencies]\ntests = [\"pytest\"]\ncli = [\"click\"]\n",
        )]);
        assert_eq!(got.extras, ["tests"]);
        let (_d, got) = project(&[(
            "setup.py",
            "setup(name='x', extras_require={'testing': ['pytest'], 'docs': []})\n",
        )]);
        assert_eq!(got.extras, ["testing"]);
    }
}
