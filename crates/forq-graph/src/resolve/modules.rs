//! Module paths to the files that define them, per language: an import
//! names a module, and its file is looked up here.

#[allow(clippy::wildcard_imports)] // resolution's own types and imports
use super::*;

pub(super) fn module_files(
    lang: Lang,
    from: &str,
    module: &str,
    name: Option<&str>,
    langs: &HashMap<String, Lang>,
    by_tail: &HashMap<String, Vec<String>>,
) -> Target {
    let repo = Repo {
        dir: from.rsplit_once('/').map_or("", |(d, _)| d),
        langs,
        by_tail,
    };
    match lang {
        Lang::Python => repo.python(module, name),
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => repo.script(module),
        Lang::Go => repo.go(module),
        Lang::Java => repo.java(module, name),
        Lang::Rust => repo.rust(module, name),
        Lang::C | Lang::Cpp => repo.c(module),
    }
}

/// The files found, or an external module when none is.
fn files(found: Vec<String>) -> Target {
    if found.is_empty() {
        Target::External
    } else {
        Target::Files(found)
    }
}

/// The repository's files, seen from the importing file's directory.
struct Repo<'a> {
    dir: &'a str,
    langs: &'a HashMap<String, Lang>,
    by_tail: &'a HashMap<String, Vec<String>>,
}

impl Repo<'_> {
    fn exists(&self, path: &str) -> bool {
        self.langs.contains_key(path)
    }

    /// The files whose path ends with one of `suffixes` (whole
    /// components), sorted.
    fn with_suffix(&self, suffixes: &[String]) -> Vec<String> {
        let mut found: Vec<String> = Vec::new();
        for s in suffixes {
            for p in self.by_tail.get(tail(s, 2)).into_iter().flatten() {
                if p == s
                    || (p.ends_with(s.as_str()) && p.as_bytes()[p.len() - s.len() - 1] == b'/')
                {
                    found.push(p.clone());
                }
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// `from .a.b import name`, `import a.b`: relative to the importing
    /// package, or any package root.
    fn python(&self, module: &str, name: Option<&str>) -> Target {
        let dots = module.chars().take_while(|&c| c == '.').count();
        let rest: Vec<&str> = module[dots..]
            .split('.')
            .filter(|s| !s.is_empty())
            .collect();
        let candidates = |segments: &[&str]| -> Vec<String> {
            let joined = segments.join("/");
            if joined.is_empty() {
                vec!["__init__.py".to_owned()]
            } else {
                vec![format!("{joined}.py"), format!("{joined}/__init__.py")]
            }
        };
        let mut with_name = rest.clone();
        if let Some(n) = name {
            with_name.push(n);
        }
        if dots > 0 {
            let mut base: Vec<&str> = self.dir.split('/').filter(|s| !s.is_empty()).collect();
            for _ in 1..dots {
                base.pop();
            }
            let rooted = |segs: &[&str]| -> Vec<String> {
                candidates(segs)
                    .into_iter()
                    .map(|c| {
                        if base.is_empty() {
                            c
                        } else {
                            format!("{}/{c}", base.join("/"))
                        }
                    })
                    .filter(|p| self.exists(p))
                    .collect()
            };
            let found = rooted(&with_name);
            if !found.is_empty() && name.is_some() {
                return Target::Files(found);
            }
            return files(rooted(&rest));
        }
        if name.is_some() {
            let found = self.with_suffix(&candidates(&with_name));
            if !found.is_empty() {
                return Target::Files(found);
            }
        }
        files(self.with_suffix(&candidates(&rest)))
    }

    /// A relative JavaScript/TypeScript import, by the resolver's
    /// extensions (a `.js` that names a `.ts` source too); a bare one is
    /// a package.
    fn script(&self, module: &str) -> Target {
        if !module.starts_with('.') {
            return Target::External;
        }
        let joined = normalize(&format!("{}/{module}", self.dir));
        let exts = [
            "",
            ".ts",
            ".tsx",
            ".js",
            ".jsx",
            ".mjs",
            ".cjs",
            "/index.ts",
            "/index.tsx",
            "/index.js",
        ];
        let stem = joined
            .strip_suffix(".js")
            .filter(|s| self.exists(&format!("{s}.ts")) || self.exists(&format!("{s}.tsx")))
            .unwrap_or(&joined);
        files(
            exts.iter()
                .map(|e| format!("{stem}{e}"))
                .filter(|p| self.exists(p))
                .take(1)
                .collect(),
        )
    }

    /// A Go package: the longest trailing part of the import path that is
    /// a directory of the repository; its non-test files.
    fn go(&self, module: &str) -> Target {
        let mut best: Option<String> = None;
        for path in self
            .langs
            .keys()
            .filter(|p| p.ends_with(".go") && !p.ends_with("_test.go"))
        {
            let d = path.rsplit_once('/').map_or("", |(d, _)| d);
            if !d.is_empty()
                && (module == d || module.ends_with(&format!("/{d}")))
                && best.as_ref().is_none_or(|b| d.len() > b.len())
            {
                best = Some(d.to_owned());
            }
        }
        let Some(best) = best else {
            return Target::External;
        };
        let mut found: Vec<String> = self
            .langs
            .keys()
            .filter(|p| p.ends_with(".go") && p.rsplit_once('/').is_some_and(|(d, _)| d == best))
            .cloned()
            .collect();
        found.sort();
        Target::Files(found)
    }

    /// `import a.b.Name`: the class's file, else the package's.
    fn java(&self, module: &str, name: Option<&str>) -> Target {
        let base = module.replace('.', "/");
        if let Some(n) = name {
            let found = self.with_suffix(&[format!("{base}/{n}.java")]);
            if !found.is_empty() {
                return Target::Files(found);
            }
        }
        files(self.with_suffix(&[format!("{base}.java")]))
    }

    /// `use crate::a::b::name`: `a/b/name.rs` or `a/b.rs` (or `mod.rs`).
    fn rust(&self, module: &str, name: Option<&str>) -> Target {
        let segments: Vec<&str> = module.split("::").collect();
        let internal = matches!(segments.first(), Some(&("crate" | "self" | "super")));
        let rest: Vec<&str> = segments
            .iter()
            .copied()
            .filter(|s| !matches!(*s, "crate" | "self" | "super"))
            .collect();
        let mut found = Vec::new();
        if let Some(n) = name {
            let mut with_name = rest.clone();
            with_name.push(n);
            let j = with_name.join("/");
            found = self.with_suffix(&[format!("{j}.rs"), format!("{j}/mod.rs")]);
        }
        if found.is_empty() && !rest.is_empty() {
            let j = rest.join("/");
            found = self.with_suffix(&[format!("{j}.rs"), format!("{j}/mod.rs")]);
        }
        match (found.is_empty(), internal) {
            (false, _) => Target::Files(found),
            (true, true) => Target::Unknown,
            // `use mycrate::x` from a workspace member looks external;
            // only the standard library is known to be.
            (true, false) if matches!(segments.first(), Some(&("std" | "core" | "alloc"))) => {
                Target::External
            }
            (true, false) => Target::Unknown,
        }
    }

    /// `#include "x.h"`: beside the includer, else anywhere by suffix.
    fn c(&self, module: &str) -> Target {
        let local = normalize(&format!("{}/{module}", self.dir));
        if self.exists(&local) {
            return Target::Files(vec![local]);
        }
        files(self.with_suffix(&[module.trim_start_matches("./").to_owned()]))
    }
}

/// `a/./b/../c` → `a/c`, without touching the file system.
pub(super) fn normalize(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    out.join("/")
}
