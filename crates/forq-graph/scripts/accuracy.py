#!/usr/bin/env python3
"""Compare forq-graph's definitions with Python's `ast` and Universal Ctags.

Usage: accuracy.py [--forq BIN] [--min-python 0.99] [--min-ctags 0.95] ROOT

Indexes ROOT with `forq graph index` (into a temporary database), lists its
definitions with `forq graph symbols --json`, then:

- Python files: every FunctionDef, AsyncFunctionDef and ClassDef that `ast`
  finds, as (file, line, name), against forq's functions, methods, classes
  and tests: recall and precision.
- Other languages: every function, method, class and Go func tag that
  `ctags` finds, as (file, name, line), against forq's definitions of that
  name in that file whose span holds the line: recall. (Test macros such as
  `TEST(Suite, Name)` are named by their arguments in forq and left out.)

Prints a JSON report and exits 1 when a figure is under its minimum, 2 when
a tool is missing. Run it on any large project, for example the sympy
source distribution from PyPI:

    pip download --no-deps --no-binary :all: sympy && tar xzf sympy-*.tar.gz
    python3 crates/forq-graph/scripts/accuracy.py --forq target/release/forq sympy-*/
"""

import argparse
import ast
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

PY_KINDS = {"function", "method", "class", "test"}
CTAGS_KINDS = {"function", "method", "class", "func"}
TEST_MACROS = {"TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TEST_CASE", "SCENARIO",
               "BOOST_AUTO_TEST_CASE", "START_TEST"}
CTAGS_LANGS = "C,C++,Go,Java,JavaScript,TypeScript,Rust"


def forq_symbols(forq, root):
    """forq's definitions, and the files it skipped (minified, binary, too
    large: left out of the comparison, as the index leaves them out)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "graph.db")
        subprocess.run([forq, "graph", "index", root, "--db", db, "--no-flow"],
                       check=True, stdout=subprocess.DEVNULL)
        out = subprocess.run([forq, "graph", "symbols", "--repo", root, "--db", db, "--json"],
                             check=True, stdout=subprocess.PIPE).stdout
        conn = sqlite3.connect(db)
        skipped = {row[0] for row in conn.execute("SELECT path FROM files WHERE status != 'parsed'")}
        conn.close()
    return json.loads(out), skipped


def ast_definitions(root, files):
    found = set()
    for rel in files:
        try:
            with open(os.path.join(root, rel), "rb") as f:
                tree = ast.parse(f.read(), filename=rel)
        except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
            continue  # files Python itself cannot parse are not compared
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add((rel, node.lineno, node.name))
    return found


def ctags_definitions(root):
    out = subprocess.run(
        ["ctags", "--output-format=json", "--fields=+nKl", "--languages=" + CTAGS_LANGS,
         "-R", "-f", "-", "."],
        cwd=root, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    found = set()
    for line in out.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag.get("kind") not in CTAGS_KINDS:
            continue
        if tag["name"] in TEST_MACROS or tag["name"].startswith("AnonymousFunction"):
            continue  # test macros are named by their arguments; ctags invents anonymous names
        found.add((os.path.normpath(tag["path"]), tag["name"], tag["line"]))
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root")
    p.add_argument("--forq", default=shutil.which("forq") or "forq")
    p.add_argument("--min-python", type=float, default=0.99)
    p.add_argument("--min-ctags", type=float, default=0.95)
    a = p.parse_args()
    root = os.path.abspath(a.root)
    if shutil.which(a.forq) is None and not os.path.exists(a.forq):
        print(f"forq binary {a.forq!r} not found; pass --forq", file=sys.stderr)
        return 2
    symbols, skipped = forq_symbols(a.forq, root)
    report = {}
    ok = True

    py_files = sorted({s["file"] for s in symbols if s["file"].endswith((".py", ".pyi"))})
    ours_py = {(s["file"], s["line"], s["name"]) for s in symbols
               if s["file"].endswith((".py", ".pyi")) and s["kind"] in PY_KINDS}
    theirs_py = ast_definitions(root, py_files)
    if theirs_py:
        hit = len(ours_py & theirs_py)
        recall, precision = hit / len(theirs_py), hit / max(len(ours_py), 1)
        report["python"] = {"ast": len(theirs_py), "forq": len(ours_py), "recall": recall,
                            "precision": precision,
                            "missed": sorted(theirs_py - ours_py)[:20],
                            "extra": sorted(ours_py - theirs_py)[:20]}
        ok &= recall >= a.min_python and precision >= a.min_python

    if shutil.which("ctags") is None:
        print("ctags not found: install universal-ctags", file=sys.stderr)
        return 2
    spans = {}
    for s in symbols:
        spans.setdefault((s["file"], s["name"]), []).append((s["line"], s["end_line"]))
    theirs = {t for t in ctags_definitions(root) if t[0] not in skipped}
    if theirs:
        missed = sorted(t for t in theirs
                        if not any(lo <= t[2] <= hi for lo, hi in spans.get((t[0], t[1]), [])))
        recall = 1 - len(missed) / len(theirs)
        report["ctags"] = {"ctags": len(theirs), "recall": recall, "skipped_files": len(skipped),
                           "missed": missed[:20]}
        ok &= recall >= a.min_ctags

    print(json.dumps(report, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
