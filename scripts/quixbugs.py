#!/usr/bin/env python3
"""The Python bugs of a QuixBugs checkout as bug trees for
`forq search bench --spaces` (see benches/realbugs/README.md).

QuixBugs is a public collection of 40 small algorithm programs, each with
one bug on one line, written by others (off-by-one bounds, a wrong operator
or variable, a missing base case, infinite loops), with a correct version of
each and test cases. Nothing of it is kept in this repository: this script
reads a checkout of it.

    quixbugs.py make QUIXBUGS DIR [--names N,...] [--budget S]

For each program that has both python_programs/NAME.py and
correct_python_programs/NAME.py, and test cases (json_testcases/NAME.json,
or a hand-written python_testcases/test_NAME.py for the graph programs),
writes DIR/quixbugs-NAME:

    NAME.py          the buggy program, as the checkout has it
    node.py          QuixBugs' graph node class, where a program needs it
    test_NAME.py     the tests: one parametrized test over NAME.json (a
                     generator's output is compared as a list; tuples as
                     lists; sqrt within its epsilon, as QuixBugs' own test does), or the
                     checkout's hand-written test with its imports made
                     local
    NAME.json        the test cases
    TARGETS          the tests that fail on the buggy program (a test that
                     hangs past --budget seconds counts as failing)
    FAULT            the buggy function's lines (the bench's report only)
    ISSUE.md         which tests fail

A test case the correct program itself does not finish within --budget
seconds (default 5) is left out, and said so; a test that fails on the
correct program is left out of TARGETS and said so. Needs pytest (the
interpreter running this script, or --python).
"""

import argparse
import ast
import concurrent.futures
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

JSON_TEST = '''import inspect
import json
import os

import pytest

from {name} import {name}

CASES = [
    json.loads(line)
    for line in open(os.path.join(os.path.dirname(__file__), "{name}.json"), encoding="utf-8")
    if line.strip()
]


def args_of(case):
    given = case[0]
    return given if isinstance(given, list) else [given]


def plain(value):
    """What JSON can hold: a generator's items, tuples as lists."""
    if inspect.isgenerator(value) or isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_{name}(case):
    expected = case[1]
    actual = plain({name}(*args_of(case)))
    {check}
'''

EXACT = "assert actual == expected"
# QuixBugs' own sqrt test: the answer within the epsilon it was given.
WITHIN_EPSILON = "assert actual == pytest.approx(expected, abs=args_of(case)[-1])"

# One case of the correct program, timed; prints "ok" or "slow".
TIME_CASE = '''import inspect, json, signal, sys
sys.path.insert(0, sys.argv[1])
mod = __import__(sys.argv[2])
fn = getattr(mod, sys.argv[2])
def alarm(*_):
    raise TimeoutError
signal.signal(signal.SIGALRM, alarm)
for line in sys.stdin:
    case = json.loads(line)
    given = case[0] if isinstance(case[0], list) else [case[0]]
    signal.setitimer(signal.ITIMER_REAL, float(sys.argv[3]))
    try:
        r = fn(*given)
        if inspect.isgenerator(r):
            list(r)
        print("ok", flush=True)
    except TimeoutError:
        print("slow", flush=True)
    except Exception:
        print("ok", flush=True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
'''


def log(msg):
    print(f"quixbugs: {msg}", file=sys.stderr, flush=True)


def local_imports(test, name):
    """The checkout's hand-written test with its `if pytest.use_correct:`
    switch between correct_python_programs and python_programs replaced by
    a plain local import."""
    switch = re.compile(
        r"if pytest\.use_correct:\n\s+from correct_python_programs\.\w+ import [\w, ]+\n"
        r"else:\n\s+from python_programs\.\w+ import ([\w, ]+)\n")
    out, n = switch.subn(lambda m: f"from {name} import {m.group(1)}\n", test)
    if n != 1:
        raise SystemExit(f"quixbugs: python_testcases/test_{name}.py does not switch its import "
                         "on pytest.use_correct as QuixBugs' tests do; edit it or leave the program out")
    return out.replace("from python_programs.node import Node", "from node import Node")


def fault(buggy, correct, path):
    """`PATH FIRST LAST` of the top-level function holding the first line
    the buggy program changes."""
    a, b = correct.splitlines(), buggy.splitlines()
    changed = next((j1 for tag, _, _, j1, _ in difflib.SequenceMatcher(a=a, b=b).get_opcodes()
                    if tag != "equal"), None)
    if changed is None:
        return None
    for node in ast.parse(buggy).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno - 1 <= changed < node.end_lineno:
            return f"{path} {node.lineno} {node.end_lineno}"
    return f"{path} {changed + 1} {changed + 1}"


def write_tree(out, name, program, node, test, cases):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, f"{name}.py"), "w", encoding="utf-8") as f:
        f.write(program)
    if node is not None:
        with open(os.path.join(out, "node.py"), "w", encoding="utf-8") as f:
            f.write(node)
    with open(os.path.join(out, f"test_{name}.py"), "w", encoding="utf-8") as f:
        f.write(test)
    if cases is not None:
        with open(os.path.join(out, f"{name}.json"), "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(c) + "\n" for c in cases))


def collect(python, tree):
    r = subprocess.run([python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", tree],
                       cwd=tree, capture_output=True, text=True, timeout=120)
    ids = [line.split("::", 1)[1] for line in r.stdout.splitlines() if "::" in line]
    if not ids:
        raise SystemExit(f"quixbugs: no test collected in {tree}:\n{r.stdout}{r.stderr}")
    return ids


def passes(python, tree, test_file, test_id, budget):
    try:
        r = subprocess.run([python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                            f"{test_file}::{test_id}"], cwd=tree, capture_output=True, timeout=budget + 10)
        return r.returncode == 0
    except subprocess.TimeoutExpired:
        return False


def quick_cases(python, tree, name, cases, budget):
    """The cases the correct program finishes within the budget."""
    feed = "".join(json.dumps(c) + "\n" for c in cases)
    try:
        r = subprocess.run([python, "-c", TIME_CASE, tree, name, str(budget)], input=feed,
                           capture_output=True, text=True, timeout=budget * len(cases) + 30)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"quixbugs: timing the correct {name} did not end")
    verdicts = r.stdout.split()
    if len(verdicts) != len(cases):
        raise SystemExit(f"quixbugs: timing the correct {name} failed:\n{r.stderr}")
    for case, v in zip(cases, verdicts):
        if v == "slow":
            log(f"{name}: a case the correct program takes over {budget} s on is left out: "
                f"{json.dumps(case)[:80]}")
    return [c for c, v in zip(cases, verdicts) if v == "ok"]


def make(args):
    root = args.quixbugs
    progs = os.path.join(root, "python_programs")
    if not os.path.isdir(progs) or not os.path.isdir(os.path.join(root, "correct_python_programs")):
        raise SystemExit(f"quixbugs: {root} is not a QuixBugs checkout (no python_programs/ and "
                         "correct_python_programs/ in it)")
    node_path = next((p for p in (os.path.join(root, "python_testcases", "node.py"),
                                  os.path.join(progs, "node.py")) if os.path.exists(p)), None)
    node = open(node_path, encoding="utf-8").read() if node_path else None
    names = sorted(f[:-3] for f in os.listdir(progs)
                   if f.endswith(".py") and not f.endswith("_test.py") and f != "node.py")
    if args.names:
        wanted = set(args.names.split(","))
        names = [n for n in names if n in wanted]
    os.makedirs(args.dir, exist_ok=True)
    made = 0
    for name in names:
        correct_path = os.path.join(root, "correct_python_programs", f"{name}.py")
        json_path = os.path.join(root, "json_testcases", f"{name}.json")
        test_path = os.path.join(root, "python_testcases", f"test_{name}.py")
        if not os.path.exists(correct_path):
            log(f"{name}: no correct_python_programs/{name}.py; left out")
            continue
        buggy = open(os.path.join(progs, f"{name}.py"), encoding="utf-8").read()
        correct = open(correct_path, encoding="utf-8").read()
        cases = None
        if os.path.exists(json_path):
            cases = [json.loads(line) for line in open(json_path, encoding="utf-8") if line.strip()]
            test = JSON_TEST.format(name=name, check=WITHIN_EPSILON if name == "sqrt" else EXACT)
        elif os.path.exists(test_path):
            test = local_imports(open(test_path, encoding="utf-8").read(), name)
        else:
            log(f"{name}: neither json_testcases/{name}.json nor python_testcases/test_{name}.py; left out")
            continue
        uses_node = "Node" in test or "Node" in buggy
        out = os.path.join(args.dir, f"quixbugs-{name}")
        with tempfile.TemporaryDirectory(prefix="forq-quixbugs-") as tmp:
            ref = os.path.join(tmp, name)
            if cases is not None:
                write_tree(ref, name, correct, node if uses_node else None, test, cases)
                cases = quick_cases(args.python, ref, name, cases, args.budget)
            write_tree(ref, name, correct, node if uses_node else None, test, cases)
            ids = collect(args.python, ref)
            with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
                good = list(pool.map(lambda t: passes(args.python, ref, f"test_{name}.py", t, args.budget), ids))
            for t, ok in zip(ids, good):
                if not ok:
                    log(f"{name}: {t} fails on the correct program; not a target")
        write_tree(out, name, buggy, node if uses_node else None, test, cases)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            bad = list(pool.map(lambda t: passes(args.python, out, f"test_{name}.py", t, args.budget), ids))
        targets = [f"test_{name}.py::{t}" for t, g, b in zip(ids, good, bad) if g and not b]
        if not targets:
            log(f"{name}: no test fails on the buggy program; left out")
            shutil.rmtree(out)
            continue
        with open(os.path.join(out, "TARGETS"), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in targets))
        where = fault(buggy, correct, f"{name}.py")
        if where:
            # For the bench's report alone; the search does not read it.
            with open(os.path.join(out, "FAULT"), "w", encoding="utf-8") as f:
                f.write(where + "\n")
        with open(os.path.join(out, "ISSUE.md"), "w", encoding="utf-8") as f:
            f.write(f"# `{name}` in {name}.py is wrong\n\nThese tests fail: {', '.join(targets)}.\n")
        log(f"{name}: {len(targets)} of {len(ids)} test(s) fail")
        made += 1
    log(f"{made} bug(s) in {args.dir}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("quixbugs", help="a QuixBugs checkout")
    m.add_argument("dir", help="where the bug trees go")
    m.add_argument("--names", help="only these programs, comma-separated")
    m.add_argument("--budget", type=float, default=5.0, help="seconds a test case may take")
    m.add_argument("--jobs", type=int, default=2)
    m.add_argument("--python", default=sys.executable, help="an interpreter with pytest")
    args = p.parse_args()
    make(args)


if __name__ == "__main__":
    main()
