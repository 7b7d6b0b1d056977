#!/usr/bin/env python3
"""Real single-function bugs from the release history of Python packages on
PyPI, for `forq search bench --spaces` (see benches/realbugs/README.md).

A bug is a function that changed between two consecutive releases of a
package, by a few lines, with its signature and decorators unchanged, and
whose old body makes some of the new release's own tests fail. The bug's
tree is the new release's source distribution with that one function put
back as the old release had it; its targets are those tests. Nobody chose
the bugs to fit a repair operator: the filter is the size of the change and
the package's tests, nothing else.

    realbugs.py mine PKG... [--pairs N] [--max-lines N] >> MANIFEST.jsonl
        Looks at the last N release pairs of each package (default 12) and
        prints one JSON object per bug found: id, package, buggy (the old
        release), fixed (the new one), file, function (its qualified name),
        lines (changed lines), targets (pytest node ids that fail with the
        old body and pass with the new), sha256 (of the buggy file).

    realbugs.py pick [--per-release N] [--per-package N] < MINED > MANIFEST
        Keeps bugs of minor and patch releases only (a major release
        changes behaviour on purpose), in the order mined, at most N per
        release pair (default 2) and N per package (default 8), so no one
        release or package makes the set.

    realbugs.py report < BENCH.json
        Prints the table of a `forq search bench --spaces --json` run over
        the bugs (solved, median search, hung candidates, timed out, not
        measured) and the bugs each brancher solved.

    realbugs.py make MANIFEST.jsonl DIR
        Writes each bug of the manifest as DIR/ID: the fixed release's
        source with the old function put back, an ISSUE.md, and TARGETS
        (the target tests, one per line). Checks each buggy file against
        the manifest's sha256, so the trees are the ones that were mined.

Options: --cache DIR (downloaded source distributions and a virtualenv
with pytest for mining; default ~/.cache/forq-realbugs). Needs pip and
network access to PyPI. No package's code is kept in this repository: the
manifest names the releases, and `make` downloads them.
"""

import argparse
import ast
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request

TEST_PATH = re.compile(r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*\.py$|_test\.py$|conftest\.py$")
RELEASE = re.compile(r"^\d+(\.\d+)*$")


def log(msg):
    print(f"realbugs: {msg}", file=sys.stderr, flush=True)


def releases(package):
    """(version, sdist URL, sha256) of PACKAGE's final releases that have a
    source distribution, oldest first, from PyPI's JSON API."""
    url = f"https://pypi.org/pypi/{package}/json"
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            data = json.load(r)
    except OSError as e:
        raise SystemExit(f"realbugs: cannot read {url}: {e}")
    found = []
    for version, files in data.get("releases", {}).items():
        sdists = [f for f in files if f.get("packagetype") == "sdist" and not f.get("yanked")]
        if RELEASE.match(version) and sdists:
            f = sdists[0]
            link = urllib.parse.urljoin(url, f["url"])  # a mirror may answer relative links
            found.append((f["upload_time_iso_8601"], version, link, f["digests"]["sha256"]))
    return [(v, u, h) for _, v, u, h in sorted(found)]


def sdist(cache, package, version, url=None, sha256=None):
    """The extracted source distribution of PACKAGE==VERSION (checked
    against SHA256 when given), or None."""
    root = os.path.join(cache, "src", f"{package}-{version}")
    if os.path.isdir(root):
        return root if os.listdir(root) else None
    if url is None:
        known = {v: (u, h) for v, u, h in releases(package)}
        if version not in known:
            log(f"{package} {version}: no source distribution on PyPI")
            return None
        url, listed = known[version]
        sha256 = sha256 or listed
    archive = os.path.join(cache, "dl", os.path.basename(url))
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    if not os.path.exists(archive):
        with urllib.request.urlopen(url, timeout=120) as r, open(archive + ".part", "wb") as f:
            shutil.copyfileobj(r, f)
        os.replace(archive + ".part", archive)
    digest = hashlib.sha256(open(archive, "rb").read()).hexdigest()
    if sha256 and digest != sha256:
        raise SystemExit(f"realbugs: {archive} has sha256 {digest}, not {sha256}; delete it and run again")
    os.makedirs(root, exist_ok=True)
    if not archive.endswith((".tar.gz", ".tgz")):
        log(f"{package} {version}: {os.path.basename(archive)} is not a tarball; left out")
        return None
    with tarfile.open(archive) as t:
        t.extractall(root, filter="data")
    tops = os.listdir(root)
    if len(tops) == 1 and os.path.isdir(os.path.join(root, tops[0])):
        inner = os.path.join(root, tops[0])
        for name in os.listdir(inner):
            shutil.move(os.path.join(inner, name), root)
        os.rmdir(inner)
    return root


def code_files(root):
    """Relative paths of the non-test Python files under ROOT."""
    out = set()
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and x not in ("docs", "doc", "build", "examples", "benchmarks")]
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root)
            if f.endswith(".py") and not TEST_PATH.search(rel) and f != "setup.py":
                out.add(rel)
    return out


def functions(text):
    """Qualified name -> (first line, last line, signature, body) of each
    function and method not nested in a function; None if TEXT does not parse."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    found = {}

    def body_of(node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]
        return "\n".join(ast.dump(b) for b in body)

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                sig = ast.dump(child.args) + "|" + "|".join(ast.dump(d) for d in child.decorator_list)
                found[prefix + child.name] = (first, child.end_lineno, sig, body_of(child))

    visit(tree, "")
    return found


def changed_lines(old, new):
    """Lines changed between two texts, blank lines and comments aside."""
    keep = lambda ls: [l.strip() for l in ls if l.strip() and not l.strip().startswith("#")]
    added = removed = 0
    for line in difflib.ndiff(keep(old), keep(new)):
        if line.startswith("+ "):
            added += 1
        elif line.startswith("- "):
            removed += 1
    return max(added, removed)


def pytest_outcomes(venv, root, files, timeout=300):
    """pytest node id -> passed?, running FILES (relative to ROOT)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, os.path.join(root, "src")])
    env.pop("PYTEST_ADDOPTS", None)
    try:
        out = subprocess.run(
            [os.path.join(venv, "bin", "python"), "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
             "--rootdir", root, "--timeout", "10", "-o", "addopts=", *files],
            cwd=root, env=env, capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {}
    # A parametrised id may hold spaces (`test_wrap[hello world-3]`), and a
    # failure's line goes on after it (` - AssertionError`): the ids come
    # from pytest's own collection, and each line is matched against them.
    ids = collected(venv, root, files, env, timeout)
    found = {}
    for line in out.stdout.splitlines():
        m = re.match(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL) (\S+::.+)$", line)
        if not m:
            continue
        rest = m.group(2)
        if rest in ids:
            test = rest
        else:
            known = [i for i in ids if rest.startswith(i + " - ")]
            test = max(known, key=len) if known else rest.split(" - ")[0]
        found[test] = m.group(1) == "PASSED"
    return found


def collected(venv, root, files, env, timeout):
    """The node ids pytest collects from FILES, exactly as it prints them."""
    try:
        out = subprocess.run(
            [os.path.join(venv, "bin", "python"), "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
             "--rootdir", root, "-o", "addopts=", *files],
            cwd=root, env=env, capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return set()
    return {line for line in out.stdout.splitlines() if "::" in line}


def mining_venv(cache):
    venv = os.path.join(cache, "venv")
    if not os.path.exists(os.path.join(venv, "bin", "python")):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "pytest", "pytest-timeout"], check=True)
    return venv


def test_files(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root)
            if f.endswith(".py") and (f.startswith("test_") or f.endswith("_test.py")) and TEST_PATH.search(rel):
                out.append(rel)
    return sorted(out)


def bug_id(package, version, function):
    return re.sub(r"[^a-z0-9.]+", "-", f"{package}-{version}-{function}".lower()).strip("-")


def splice(new_text, new_span, old_text, old_span):
    new_lines = new_text.splitlines(keepends=True)
    old_lines = old_text.splitlines(keepends=True)
    return "".join(new_lines[: new_span[0] - 1] + old_lines[old_span[0] - 1: old_span[1]] + new_lines[new_span[1]:])


def mine(args):
    cache = os.path.expanduser(args.cache)
    venv = mining_venv(cache)
    for package in args.packages:
        rs = releases(package)[-(args.pairs + 1):]
        for (old_v, old_url, old_sha), (new_v, new_url, new_sha) in zip(rs, rs[1:]):
            old = sdist(cache, package, old_v, old_url, old_sha)
            new = sdist(cache, package, new_v, new_url, new_sha)
            if not old or not new:
                continue
            tests = test_files(new)
            if not tests:
                log(f"{package} {new_v}: no test files in the source distribution")
                continue
            clean = None
            for rel in sorted(code_files(old) & code_files(new)):
                old_text = open(os.path.join(old, rel), encoding="utf-8", errors="replace").read()
                new_text = open(os.path.join(new, rel), encoding="utf-8", errors="replace").read()
                if old_text == new_text:
                    continue
                of, nf = functions(old_text), functions(new_text)
                if of is None or nf is None:
                    continue
                for name, (n0, n1, nsig, nbody) in nf.items():
                    if name not in of:
                        continue
                    o0, o1, osig, obody = of[name]
                    if osig != nsig or obody == nbody:
                        continue
                    old_fn = "".join(old_text.splitlines(keepends=True)[o0 - 1: o1])
                    new_fn = "".join(new_text.splitlines(keepends=True)[n0 - 1: n1])
                    lines = changed_lines(old_fn.splitlines(), new_fn.splitlines())
                    if lines == 0 or lines > args.max_lines:
                        continue
                    short = name.rsplit(".", 1)[-1]
                    mentions = [t for t in tests if short in open(os.path.join(new, t), encoding="utf-8", errors="replace").read()]
                    if not mentions:
                        continue
                    if clean is None:
                        clean = pytest_outcomes(venv, new, tests)
                    buggy_text = splice(new_text, (n0, n1), old_text, (o0, o1))
                    with tempfile.TemporaryDirectory(prefix="forq-realbugs-") as tmp:
                        work = os.path.join(tmp, "w")
                        shutil.copytree(new, work, symlinks=True)
                        with open(os.path.join(work, rel), "w", encoding="utf-8") as f:
                            f.write(buggy_text)
                        buggy = pytest_outcomes(venv, work, mentions)
                    targets = sorted(t for t, ok in buggy.items() if not ok and clean.get(t))
                    if not targets:
                        log(f"{package} {new_v} {name}: {lines} line(s) changed, no test tells")
                        continue
                    bug = {
                        "id": bug_id(package, new_v, name),
                        "package": package,
                        "buggy": old_v,
                        "fixed": new_v,
                        "file": rel,
                        "function": name,
                        "lines": lines,
                        "targets": targets,
                        "sha256": hashlib.sha256(buggy_text.encode()).hexdigest(),
                    }
                    log(f"{bug['id']}: {len(targets)} target(s), {lines} line(s)")
                    print(json.dumps(bug), flush=True)


def make(args):
    cache = os.path.expanduser(args.cache)
    os.makedirs(args.dir, exist_ok=True)
    made = 0
    for line in open(args.manifest, encoding="utf-8"):
        if not line.strip():
            continue
        bug = json.loads(line)
        out = os.path.join(args.dir, bug["id"])
        old, new = sdist(cache, bug["package"], bug["buggy"]), sdist(cache, bug["package"], bug["fixed"])
        if not old or not new:
            log(f"{bug['id']}: could not download {bug['package']} {bug['buggy']} and {bug['fixed']}; left out")
            continue
        rel = bug["file"]
        old_text = open(os.path.join(old, rel), encoding="utf-8", errors="replace").read()
        new_text = open(os.path.join(new, rel), encoding="utf-8", errors="replace").read()
        o, n = functions(old_text)[bug["function"]], functions(new_text)[bug["function"]]
        buggy_text = splice(new_text, n[:2], old_text, o[:2])
        if hashlib.sha256(buggy_text.encode()).hexdigest() != bug["sha256"]:
            raise SystemExit(f"realbugs: {bug['id']}: the buggy {rel} is not the one mined (sha256 differs); "
                             "the release on PyPI changed, or the manifest line was edited")
        if os.path.exists(out):
            shutil.rmtree(out)
        shutil.copytree(new, out, symlinks=True)
        with open(os.path.join(out, rel), "w", encoding="utf-8") as f:
            f.write(buggy_text)
        with open(os.path.join(out, "TARGETS"), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in bug["targets"]))
        # Where the buggy function sits in the bug's tree, for the bench's
        # report alone (the search does not read it).
        with open(os.path.join(out, "FAULT"), "w", encoding="utf-8") as f:
            f.write(f"{rel} {n[0]} {n[0] + o[1] - o[0]}\n")
        with open(os.path.join(out, "ISSUE.md"), "w", encoding="utf-8") as f:
            f.write(f"# `{bug['function']}` in {rel} is wrong\n\n"
                    f"These tests fail: {', '.join(bug['targets'])}.\n")
        made += 1
    log(f"{made} bug(s) in {args.dir}")


def pick(args):
    """Keeps, in manifest order, bugs of minor and patch releases only (a
    major release changes behaviour on purpose), at most PER_RELEASE per
    release pair and PER_PACKAGE per package."""
    per_release, per_package = {}, {}
    for line in sys.stdin:
        if not line.strip():
            continue
        bug = json.loads(line)
        major = lambda v: v.split(".")[0]
        if major(bug["buggy"]) != major(bug["fixed"]):
            continue
        pair = (bug["package"], bug["fixed"])
        if per_release.get(pair, 0) >= args.per_release or per_package.get(bug["package"], 0) >= args.per_package:
            continue
        bug["id"] = bug_id(bug["package"], bug["fixed"], bug["function"])
        per_release[pair] = per_release.get(pair, 0) + 1
        per_package[bug["package"]] = per_package.get(bug["package"], 0) + 1
        print(json.dumps(bug))


def report(args):
    """Reads `forq search bench --spaces --json` output on stdin and prints
    the README's table (Markdown) and, per brancher, the bugs it solved
    (candidates, seconds) and those not measured (with the gate's reason)."""
    data = json.load(sys.stdin)
    runs = data.get("runs", [])
    print("| brancher | solved | median search, solved | candidates killed for hanging | timed out "
          "| fault suspected | fault edited | not measured |")
    print("|---|---|---|---|---|---|---|---|")
    unmeasured = data.get("unmeasured", [])
    for s in data.get("spaces", []):
        median = f"{s['median_solved_s']:.1f} s" if s["solved"] else "—"
        faults = s.get("with_fault", 0)
        # Without statement-level localisation (mutate) nothing is suspected.
        suspected = f"{s['fault_suspected']}/{s['localised']}" if s.get("localised") else "—"
        print(f"| {s['brancher']} | {s['solved']}/{s['examples']} | {median} | {s['hung']} | "
              f"{s['timed_out']} | {suspected} | {s.get('fault_edited', 0)}/{faults} "
              f"| {len(unmeasured)} |")
    for s in data.get("spaces", []):
        solved = [r for r in runs if r["brancher"] == s["brancher"] and r["solved"]]
        names = ", ".join(f"{r['example']} ({r['nodes']}, {r['wall_s']:.1f} s)" for r in solved)
        print(f"\n{s['brancher']} solved: {names or 'none'}")
    for s in data.get("spaces", []):
        unsolved = [r for r in runs if r["brancher"] == s["brancher"] and not r["solved"]
                    and "fault_candidates" in r]
        if unsolved:
            print(f"\n{s['brancher']} unsolved (rank of the fault among suspected lines, "
                  "candidates editing it / evaluated):")
            for r in unsolved:
                rank = r.get("fault_rank", "—" if r.get("suspected") else "no line localisation")
                print(f"- {r['example']}: {rank}, {r['fault_candidates']}/{r['nodes']}")
    for u in unmeasured:
        print(f"\nnot measured: {u['example']}: {u['reason']}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cache", default="~/.cache/forq-realbugs")
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mine")
    m.add_argument("packages", nargs="+")
    m.add_argument("--pairs", type=int, default=12)
    m.add_argument("--max-lines", type=int, default=3)
    k = sub.add_parser("pick")
    k.add_argument("--per-release", type=int, default=2)
    k.add_argument("--per-package", type=int, default=8)
    k = sub.add_parser("make")
    k.add_argument("manifest")
    k.add_argument("dir")
    sub.add_parser("report")
    args = p.parse_args()
    {"mine": mine, "pick": pick, "make": make, "report": report}[args.cmd](args)


if __name__ == "__main__":
    main()
