#!/usr/bin/env python3
"""HumanEvalFix's JavaScript bugs as bug trees for `forq fix`, and the
verdict on what forq handed back (see benches/realbugs/README.md).

The JavaScript half of HumanEvalPack (bigcode's OctoPack work) is the same
164 functions as the Python one, written in JavaScript, each with one bug
written by hand into a correct solution, and HumanEval-X's tests (a
function of `console.assert` calls). Nothing of it is kept in this
repository: this script reads its JSONL (the fields task_id, prompt,
canonical_solution, buggy_solution, bug_type, entry_point, test).

    humanevalfix_js.py make JSONL DIR [--half even|odd|all] [--below N] [--budget S]
    humanevalfix_js.py verdict DIR RESULTS [--json]

`make` writes, for each task, DIR/humanevalfix-js-NNN:

    task.js              the prompt (its comment, with the `>>>` examples,
                         any helper it declares, the signature) and the
                         buggy body; every top-level function exported
    test/task.test.js    one node:test test per `console.assert` of the
                         task's test (`assert.ok`), or one test running
                         the whole test where it loops or draws inputs
    package.json         `npm test` runs `node --test`
    TARGETS              the tests that fail on the buggy body (one that
                         runs past --budget seconds counts as failing)
    ISSUE.md             which function is wrong and which tests fail

and DIR/.reference/humanevalfix-js-NNN.json (the correct source, the
bug's class, the entry point), outside the tree. A task whose correct body
fails a test, or whose buggy body fails none, is left out and said so.

`verdict` judges each handed-back patch against the correct function on
the tests' own arguments and about a hundred made from them, as
humanevalfix.py does for Python (calls run by node in a `vm` context with
a time limit, results compared as JSON, numbers to six places). A task
whose tests call with no literal arguments (they draw random inputs) is
judged by running its tests twenty times on the patched source.

The figures in benches/realbugs/README.md are of tasks 0-71 (`--below 72`)
of HumanEvalPack's JavaScript file.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from humanevalfix import calls, compare, nudged_inputs, number, report, verdict_rows  # noqa: E402

# Calls the entry point (argv[2]) of the source in argv[1] on each line of
# stdin (a JSON array of arguments), each within argv[3] ms, in a vm
# context (`node -e` puts the first argument at argv[1]); prints
# one JSON line per call: ["ok", JSON of the result], ["raised", name] or
# ["slow"].
CALL = r'''
const fs = require('fs'), vm = require('vm'), readline = require('readline');
const source = fs.readFileSync(process.argv[1], 'utf8').replace(/module\.exports\s*=.*$/m, '');
const ctx = vm.createContext({ Math, JSON, Array, Object, Number, String, Set, Map });
vm.runInContext(source + '\n;globalThis.__fn = ' + process.argv[2] + ';', ctx, { timeout: 5000 });
const round = (k, v) => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1e6) / 1e6 : v);
const lines = readline.createInterface({ input: process.stdin });
lines.on('line', (line) => {
  ctx.__args = JSON.parse(line);
  let out;
  try {
    vm.runInContext('__out = __fn(...__args)', ctx, { timeout: Number(process.argv[3]) });
    const r = JSON.stringify(ctx.__out, round);
    out = ['ok', r === undefined ? 'undefined' : r];
  } catch (e) {
    out = e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT' ? ['slow'] : ['raised', (e && e.name) || String(e)];
  }
  process.stdout.write(JSON.stringify(out) + '\n');
});
'''

# Evaluates each line of stdin (the argument text of a call) in the context
# of the source in argv[1]; prints a JSON array of arguments per line, or
# null where they are not plain data.
ARGS = r'''
const fs = require('fs'), vm = require('vm');
const source = fs.readFileSync(process.argv[1], 'utf8').replace(/module\.exports\s*=.*$/m, '');
const ctx = vm.createContext({ Math, JSON });
vm.runInContext(source, ctx, { timeout: 5000 });
for (const line of fs.readFileSync(0, 'utf8').split('\n').filter(Boolean)) {
  try {
    const v = vm.runInContext('[' + JSON.parse(line) + ']', ctx, { timeout: 1000 });
    const text = JSON.stringify(v);
    console.log(JSON.stringify(v) === text && JSON.stringify(JSON.parse(text)) === text ? text : 'null');
  } catch (e) {
    console.log('null');
  }
}
'''


def log(msg):
    print(f"humanevalfix-js: {msg}", file=sys.stderr, flush=True)


def name_of(n):
    return f"humanevalfix-js-{n:03d}"


def balanced(text, start):
    """The end (exclusive) of the parenthesised group opening at `start`,
    skipping string literals; None when it never closes."""
    depth, i, quote = 0, start, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"`":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def asserts(test):
    """The expressions of the test's `console.assert(...)` calls, and
    whether they are all the test does (no loop, no helper)."""
    found, i = [], 0
    while True:
        at = test.find("console.assert(", i)
        if at < 0:
            break
        end = balanced(test, at + len("console.assert"))
        if end is None:
            break
        found.append(" ".join(test[at + len("console.assert("):end - 1].split()))
        i = end
    inner = test[test.find("{") + 1:test.rfind("}")] if "{" in test else ""
    rest = inner
    for expr in found:
        rest = rest.replace("console.assert", "", 1)
    plain = not re.search(r"\b(for|while|const|let|var|if)\b", re.sub(r"'[^']*'", "", rest))
    return found, plain


def exported(prompt):
    return re.findall(r"^const (\w+) = ", prompt, flags=re.M)


def tests_file(row):
    names = ", ".join(exported(row["prompt"]))
    head = ("'use strict';\nconst test = require('node:test');\nconst assert = require('node:assert');\n"
            f"const {{ {names} }} = require('../task.js');\n\n")
    found, plain = asserts(row["test"])
    if plain and found:
        return head + "\n".join(f"test('case {k:02d}', () => {{\n  assert.ok({e});\n}});\n"
                                for k, e in enumerate(found))
    test = row["test"]
    body = test[test.find("{") + 1:test.rfind("}")].replace("console.assert(", "assert.ok(")
    return head + f"test('check', () => {{{body}}});\n"


def write_tree(out, row, body):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.join(out, "test"))
    names = ", ".join(exported(row["prompt"]))
    with open(os.path.join(out, "task.js"), "w", encoding="utf-8") as f:
        f.write(row["prompt"] + body.rstrip() + f"\n\nmodule.exports = {{ {names} }};\n")
    with open(os.path.join(out, "test", "task.test.js"), "w", encoding="utf-8") as f:
        f.write(tests_file(row))
    with open(os.path.join(out, "package.json"), "w", encoding="utf-8") as f:
        json.dump({"name": os.path.basename(out), "version": "1.0.0", "private": True,
                   "scripts": {"test": "node --test"}}, f, indent=2)
        f.write("\n")


def test_names(tree):
    return re.findall(r"^test\('([^']+)'", open(os.path.join(tree, "test", "task.test.js"),
                                                 encoding="utf-8").read(), flags=re.M)


def run_tests(tree, budget):
    """{test name: passed}, each test in a process of its own."""
    out = {}
    for name in test_names(tree):
        # In a session of its own: on a timeout the whole group goes,
        # node's test runner and the child it runs the file in.
        p = subprocess.Popen(["node", "--test", f"--test-name-pattern=^{re.escape(name)}$", "test/"],
                             cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        try:
            out[name] = p.wait(timeout=budget) == 0
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            out[name] = False
    return out


def make(args):
    rows = [json.loads(line) for line in open(args.jsonl, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if args.half == "all" or number(r) % 2 == (args.half == "odd")]
    rows = [r for r in rows if args.below is None or number(r) < args.below]
    os.makedirs(os.path.join(args.dir, ".reference"), exist_ok=True)
    made = 0
    for row in rows:
        name = name_of(number(row))
        out = os.path.join(args.dir, name)
        with tempfile.TemporaryDirectory(prefix="forq-humanevalfix-") as tmp:
            write_tree(tmp, row, row["canonical_solution"])
            good = run_tests(tmp, args.budget)
        if not good or not all(good.values()):
            log(f"{name}: the correct body fails {good}; left out")
            continue
        write_tree(out, row, row["buggy_solution"])
        bad = run_tests(out, args.budget)
        targets = [f"test/task.test.js::{t}" for t in good if not bad.get(t, False)]
        if not targets:
            log(f"{name}: no test fails on the buggy body; left out")
            shutil.rmtree(out)
            continue
        with open(os.path.join(out, "TARGETS"), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in targets))
        with open(os.path.join(out, "ISSUE.md"), "w", encoding="utf-8") as f:
            entry = exported(row["prompt"])[-1]
            f.write(f"# `{entry}` in task.js returns wrong results\n\n"
                    f"These tests fail: {', '.join(targets)}.\n")
        names = ", ".join(exported(row["prompt"]))
        tail = f"\n\nmodule.exports = {{ {names} }};\n"
        with open(os.path.join(args.dir, ".reference", f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump({"task_id": row["task_id"], "entry_point": exported(row["prompt"])[-1],
                       "bug_type": row["bug_type"], "test": row["test"],
                       "correct": row["prompt"] + row["canonical_solution"].rstrip() + tail,
                       "buggy": row["prompt"] + row["buggy_solution"].rstrip() + tail}, f)
        made += 1
    log(f"{made} bug(s) in {args.dir}")


def call_args(reference):
    """The tests' own argument lists of the function under test (those
    that evaluate to plain data)."""
    test, entry = reference["test"], reference["entry_point"]
    texts = []
    for m in re.finditer(rf"\b{re.escape(entry)}\(", test):
        end = balanced(test, m.end() - 1)
        if end is not None:
            texts.append(" ".join(test[m.end():end - 1].split()))
    if not texts:
        return []
    with tempfile.NamedTemporaryFile("w", suffix=".js", delete=False) as f:
        f.write(reference["correct"])
    try:
        r = subprocess.run(["node", "-e", ARGS, f.name], input="".join(json.dumps(t) + "\n" for t in texts),
                           capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(f.name)
    return [json.loads(x) for x in r.stdout.splitlines() if x.strip() not in ("", "null")]


def inputs(reference, count=100, seed=7):
    return nudged_inputs(call_args(reference), list, json.dumps, count, seed)


def answers(path, entry, args_list, budget):
    argv = ["node", "-e", CALL, path, entry, str(int(budget * 1000))]
    return calls(argv, [json.dumps(a) for a in args_list], budget)


def rerun(tests, source, budget, times=20):
    """The verdict on a task whose tests draw their own inputs (no literal
    arguments to call with): its tests, run `times` times on the patched
    source."""
    with tempfile.TemporaryDirectory(prefix="forq-humanevalfix-") as tmp:
        shutil.copytree(tests, os.path.join(tmp, "test"))
        open(os.path.join(tmp, "task.js"), "w", encoding="utf-8").write(source)
        for k in range(times):
            p = subprocess.Popen(["node", "--test", "test/"], cwd=tmp, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                failed = p.wait(timeout=budget * 20) != 0
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                failed = True
            if failed:
                return "wrong", k, f"its own randomised tests fail on run {k + 1} of {times}"
    return "correct", times, ""


def judge(reference, tests, source, budget):
    """As humanevalfix.py judges; a task whose tests have no literal
    arguments is judged by rerunning them (they draw random inputs)."""
    entry = reference["entry_point"]
    with tempfile.TemporaryDirectory(prefix="forq-humanevalfix-") as tmp:
        right, cand = os.path.join(tmp, "right.js"), os.path.join(tmp, "cand.js")
        open(right, "w", encoding="utf-8").write(reference["correct"])
        open(cand, "w", encoding="utf-8").write(source)
        args_list = inputs(reference)
        if not args_list:
            return rerun(tests, source, budget)
        want = answers(right, entry, args_list, budget)
        got = answers(cand, entry, args_list, budget)
    return compare(args_list, want, got, lambda a: f"{entry}({json.dumps(a)[1:-1]})")


def verdict(args):
    def judged(bug, reference, source):
        return judge(reference, os.path.join(args.dir, bug, "test"), source, args.budget)
    report(verdict_rows(args.dir, args.results, "task.js", judged), args.json)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("jsonl", help="HumanEvalPack's JavaScript JSONL")
    m.add_argument("dir", help="where the bug trees go")
    m.add_argument("--half", choices=["even", "odd", "all"], default="all")
    m.add_argument("--below", type=int, help="only the tasks numbered below this")
    m.add_argument("--budget", type=float, default=10.0, help="seconds a test may take")
    v = sub.add_parser("verdict")
    v.add_argument("dir", help="the bug trees `make` wrote")
    v.add_argument("results", help="a directory of `forq fix --json` outputs, humanevalfix-js-NNN.json")
    v.add_argument("--budget", type=float, default=2.0, help="seconds a call may take")
    v.add_argument("--json", action="store_true")
    args = p.parse_args()
    make(args) if args.cmd == "make" else verdict(args)


if __name__ == "__main__":
    main()
