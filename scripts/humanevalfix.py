#!/usr/bin/env python3
"""HumanEvalFix's Python bugs as bug trees for `forq fix` and `forq search
bench`, and the verdict on what forq handed back (see
benches/realbugs/README.md).

HumanEvalFix (part of HumanEvalPack, bigcode's OctoPack work) is 164 small
Python functions, each with one bug written by hand into a correct
solution, and the unit tests of OpenAI's HumanEval. Nothing of it is kept
in this repository: this script reads its JSONL (the fields task_id,
prompt, canonical_solution, buggy_solution, bug_type, entry_point, test).

    humanevalfix.py make JSONL DIR [--half even|odd|all] [--budget S]
    humanevalfix.py verdict DIR RESULTS [--json]

`make` writes, for each task, DIR/humanevalfix-NNN:

    task.py          the prompt (signature and docstring, with its `>>>`
                     examples) and the buggy body
    test_task.py     HumanEval's tests, one pytest test per assertion of
                     its check() (one test for a check() that loops or
                     draws random inputs)
    TARGETS          the tests that fail on the buggy body (a test that
                     runs past --budget seconds counts as failing)
    FAULT            the buggy function's lines (the bench's report only)
    ISSUE.md         which function is wrong and which tests fail

and DIR/.reference/humanevalfix-NNN.json (the correct body, the bug's
class, the entry point): outside the tree, so neither the search nor a
model sees it. A task whose correct body fails a test, or whose buggy body
fails none, is left out and said so. `--half even` keeps the tasks of even
number, `odd` the others: two disjoint sets, one to measure unseen and
one to tune on.

`verdict` reads RESULTS, a directory of `forq fix --json` outputs named
humanevalfix-NNN.json, and judges each handed-back patch against the
correct body on the tests' own inputs and about a hundred more made from
them (numbers nudged, lists and strings cut, grown, reversed and
shuffled, case swapped): *correct* when the patched function returns what
the correct one does on every input the correct one answers within the
budget, *wrong* otherwise. It prints a table per bug class, or the rows
as JSON.
"""

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quixbugs import fault  # noqa: E402

# Runs every test_* function of test_task.py in DIR, each within a budget;
# prints {name: passed}.
RUN_TESTS = '''import json, signal, sys
sys.path.insert(0, sys.argv[1])
sys.setrecursionlimit(3000)
import test_task
def alarm(*_):
    raise TimeoutError
signal.signal(signal.SIGALRM, alarm)
out = {}
for name in sorted(n for n in dir(test_task) if n.startswith("test_")):
    signal.setitimer(signal.ITIMER_REAL, float(sys.argv[2]))
    try:
        getattr(test_task, name)()
        out[name] = True
    except BaseException:
        out[name] = False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
print(json.dumps(out))
'''

# Calls ENTRY of the module in FILE on each line of stdin (a repr of an
# argument tuple), each within a budget; prints one JSON line per call:
# ["ok", repr(result)], ["raised", type name] or ["slow"].
CALL = '''import ast, copy, json, signal, sys, importlib.util
spec = importlib.util.spec_from_file_location("task_under_test", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
fn = getattr(mod, sys.argv[2])
sys.setrecursionlimit(3000)
def alarm(*_):
    raise TimeoutError
signal.signal(signal.SIGALRM, alarm)
for line in sys.stdin:
    args = ast.literal_eval(line)
    signal.setitimer(signal.ITIMER_REAL, float(sys.argv[3]))
    try:
        r = fn(*copy.deepcopy(args))
        if isinstance(r, float):
            r = round(r, 6)
        print(json.dumps(["ok", repr(r)]), flush=True)
    except TimeoutError:
        print(json.dumps(["slow"]), flush=True)
    except BaseException as e:
        print(json.dumps(["raised", type(e).__name__]), flush=True)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
'''


def log(msg):
    print(f"humanevalfix: {msg}", file=sys.stderr, flush=True)


def number(row):
    return int(row["task_id"].split("/")[1])


def name_of(n):
    return f"humanevalfix-{n:03d}"


def checks(row):
    """The test file: HumanEval's check() and one test per assertion."""
    source = row["test"]
    tree = ast.parse(source)
    check = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"), None)
    if check is None:
        raise SystemExit(f"humanevalfix: {row['task_id']}: its test has no check() function")
    param = check.args.args[0].arg
    entry = row["entry_point"]
    head = f"from task import *  # noqa: F401,F403\nfrom task import {entry}\n\n{source}\n"
    body = [s for s in check.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, (ast.Constant, ast.Name)))]
    asserts = [s for s in body if isinstance(s, ast.Assert)]
    if len(asserts) != len(body) or not asserts:
        return head + f"\n\ndef test_check():\n    check({entry})\n"
    tests = []
    for s in asserts:
        if isinstance(s.test, ast.Constant):
            continue  # `assert True`: HumanEval's placeholder
        text = ast.get_source_segment(source, s)
        tests.append(f"def test_{len(tests):02d}():\n    {param} = {entry}  # noqa: F841\n    {text}\n")
    return head + "\n\n" + "\n\n".join(tests)


def write_tree(out, row, body):
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, "task.py"), "w", encoding="utf-8") as f:
        f.write(row["prompt"] + body)
    with open(os.path.join(out, "test_task.py"), "w", encoding="utf-8") as f:
        f.write(checks(row))


def run_tests(python, tree, budget):
    try:
        r = subprocess.run([python, "-c", RUN_TESTS, tree, str(budget)], capture_output=True,
                           text=True, timeout=budget * 40 + 30)
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError):
        return None


def make(args):
    rows = [json.loads(line) for line in open(args.jsonl, encoding="utf-8") if line.strip()]
    rows = [r for r in rows if args.half == "all" or number(r) % 2 == (args.half == "odd")]
    os.makedirs(os.path.join(args.dir, ".reference"), exist_ok=True)
    made = 0
    for row in rows:
        n, name = number(row), name_of(number(row))
        out = os.path.join(args.dir, name)
        with tempfile.TemporaryDirectory(prefix="forq-humanevalfix-") as tmp:
            write_tree(tmp, row, row["canonical_solution"])
            good = run_tests(args.python, tmp, args.budget)
        if not good or not all(good.values()):
            log(f"{name}: the correct body fails {good}; left out")
            continue
        write_tree(out, row, row["buggy_solution"])
        bad = run_tests(args.python, out, args.budget) or {}
        targets = [f"test_task.py::{t}" for t in sorted(good) if not bad.get(t, False)]
        if not targets:
            log(f"{name}: no test fails on the buggy body; left out")
            shutil.rmtree(out)
            continue
        with open(os.path.join(out, "TARGETS"), "w", encoding="utf-8") as f:
            f.write("".join(t + "\n" for t in targets))
        correct = row["prompt"] + row["canonical_solution"]
        buggy = row["prompt"] + row["buggy_solution"]
        where = fault(buggy, correct, "task.py")
        if where:
            with open(os.path.join(out, "FAULT"), "w", encoding="utf-8") as f:
                f.write(where + "\n")
        with open(os.path.join(out, "ISSUE.md"), "w", encoding="utf-8") as f:
            f.write(f"# `{row['entry_point']}` in task.py returns wrong results\n\n"
                    f"These tests fail: {', '.join(targets)}.\n")
        with open(os.path.join(args.dir, ".reference", f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump({"task_id": row["task_id"], "entry_point": row["entry_point"],
                       "bug_type": row["bug_type"], "correct": correct, "buggy": buggy}, f)
        made += 1
    log(f"{made} bug(s) in {args.dir}")


def call_args(test_source, entry):
    """The argument tuples of the tests' own calls of the function under
    test (those written as literals)."""
    found = []
    for node in ast.walk(ast.parse(test_source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in (entry, "candidate") and not node.keywords:
            try:
                found.append(tuple(ast.literal_eval(a) for a in node.args))
            except (ValueError, SyntaxError, TypeError):
                pass
    return found


def nudged(value, rng):
    """A value near `value`, of its type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice([-2, -1, 1, 2, 3, -value, value])
    if isinstance(value, float):
        return round(value + rng.choice([-1.5, -0.5, 0.25, 0.5, 1.0]), 3)
    if isinstance(value, str):
        if not value:
            return rng.choice(["a", " ", "A1"])
        i = rng.randrange(len(value))
        return rng.choice([value[:i], value[i:], value[::-1], value.swapcase(),
                           value + value[i], value[:i] + value[i + 1:]])
    if isinstance(value, (list, tuple)):
        items = list(value)
        pick = rng.randrange(5)
        if pick == 0 and items:
            items.pop(rng.randrange(len(items)))
        elif pick == 1 and items:
            items.append(nudged(rng.choice(items), rng))
        elif pick == 2:
            rng.shuffle(items)
        elif pick == 3:
            items.reverse()
        elif items:
            i = rng.randrange(len(items))
            items[i] = nudged(items[i], rng)
        return type(value)(items)
    if isinstance(value, dict) and value:
        items = dict(value)
        items.pop(rng.choice(list(items)))
        return items
    return value


def inputs(test_source, entry, count=100, seed=7):
    """The tests' own argument tuples and `count` nudged ones."""
    return nudged_inputs(call_args(test_source, entry), tuple, repr, count, seed)


def nudged_inputs(own, make, key, count, seed):
    """`own` (argument lists) and up to `count` more, each one argument of
    one of them nudged; `make` builds an argument list, `key` tells two
    apart."""
    rng = random.Random(seed)
    made, seen = list(own), {key(a) for a in own}
    for _ in range(count * 5):
        if not own or len(made) >= len(own) + count:
            break
        base = list(rng.choice(own))
        if base:
            i = rng.randrange(len(base))
            base[i] = nudged(base[i], rng)
        t = make(base)
        if key(t) not in seen:
            seen.add(key(t))
            made.append(t)
    return made


def calls(argv, lines, budget):
    """Runs a call harness on one input per line; its JSON answer per
    line, or None when it did not answer each."""
    try:
        r = subprocess.run(argv, input="".join(x + "\n" for x in lines), capture_output=True,
                           text=True, timeout=budget * len(lines) + 60)
    except subprocess.TimeoutExpired:
        return None
    out = r.stdout.splitlines()
    return [json.loads(x) for x in out] if len(out) == len(lines) else None


def answers(python, path, entry, args_list, budget):
    return calls([python, "-c", CALL, path, entry, str(budget)], [repr(a) for a in args_list], budget)


def patched(reference, patch, file="task.py"):
    """`file` after `patch` (git format) on the buggy source, or None."""
    with tempfile.TemporaryDirectory(prefix="forq-humanevalfix-") as tmp:
        with open(os.path.join(tmp, file), "w", encoding="utf-8") as f:
            f.write(reference["buggy"])
        r = subprocess.run(["git", "apply", f"--include={file}", "-"], cwd=tmp, input=patch,
                           capture_output=True, text=True)
        if r.returncode != 0:
            return None
        return open(os.path.join(tmp, file), encoding="utf-8").read()


def judge(python, reference, test_source, source, budget):
    """("correct" | "wrong", inputs compared, first disagreement)."""
    entry = reference["entry_point"]
    with tempfile.TemporaryDirectory(prefix="forq-humanevalfix-") as tmp:
        right, cand = os.path.join(tmp, "right.py"), os.path.join(tmp, "cand.py")
        open(right, "w", encoding="utf-8").write(reference["correct"])
        open(cand, "w", encoding="utf-8").write(source)
        args_list = inputs(test_source, entry)
        want = answers(python, right, entry, args_list, budget)
        got = answers(python, cand, entry, args_list, budget)
    return compare(args_list, want, got, lambda a: f"{entry}{a!r}")


def verdict(args):
    def judged(bug, reference, source):
        test_source = open(os.path.join(args.dir, bug, "test_task.py"), encoding="utf-8").read()
        return judge(args.python, reference, test_source, source, args.budget)
    report(verdict_rows(args.dir, args.results, "task.py", judged), args.json)


def verdict_rows(trees, results, file, judged):
    """A row per bug tree of TREES (made by `make`): its class, and the
    outcome of what `forq fix` handed back (in RESULTS) as `judged(bug,
    reference, patched source)` says."""
    rows = []
    refs = os.path.join(trees, ".reference")
    for name in sorted(os.listdir(refs)):
        bug = name[:-5]
        if not os.path.isdir(os.path.join(trees, bug)):
            continue  # a bug of the other half
        reference = json.load(open(os.path.join(refs, name), encoding="utf-8"))
        row = {"bug": bug, "bug_type": reference["bug_type"], "outcome": "not run"}
        if os.path.exists(os.path.join(results, f"{bug}.json")):
            result, patch = read_result(results, bug)
            row["seconds"] = result.get("elapsed_s")
            row["evidence"] = result.get("evidence")
            if not result.get("solved") or not patch:
                row["outcome"] = "not solved"
            else:
                source = patched(reference, patch, file)
                if source is None:
                    row["outcome"], row["why"] = "wrong", f"the patch does not apply to {file}"
                else:
                    row["outcome"], row["compared"], row["why"] = judged(bug, reference, source)
        rows.append(row)
    return rows


def compare(args_list, want, got, show):
    """("correct" | "wrong", inputs compared, first disagreement) of the
    answers `got` against `want` on `args_list` (`show` prints a call)."""
    if want is None or got is None:
        return "wrong", 0, "the patched function could not be run on the inputs"
    compared = 0
    for a, w, g in zip(args_list, want, got):
        if w[0] != "ok":
            continue  # outside what the correct function answers
        compared += 1
        if g != w:
            return "wrong", compared, f"{show(a)}: {g[-1] if len(g) > 1 else g[0]}, want {w[1]}"
    return "correct", compared, ""


def read_result(results, bug):
    """(`forq fix --json` output of `bug` in RESULTS, its patch text)."""
    try:
        result = json.load(open(os.path.join(results, f"{bug}.json"), encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        result = {}
    patch = result.get("patch") or ""
    if patch and os.path.exists(patch):
        patch = open(patch, encoding="utf-8").read()  # `patch` names fix.patch
    return result, patch


def report(rows, as_json):
    """Prints the rows, or a table per bug class and the wrong ones."""
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    classes = sorted({r["bug_type"] for r in rows})
    print("| bug class | bugs | handed back | correct | green and wrong | corroborated | corroborated and wrong |")
    print("|---|---|---|---|---|---|---|")
    for c in classes + ["all"]:
        sel = [r for r in rows if c == "all" or r["bug_type"] == c]
        back = [r for r in sel if r["outcome"] in ("correct", "wrong", "unjudged")]
        correct = [r for r in back if r["outcome"] == "correct"]
        wrong = [r for r in back if r["outcome"] == "wrong"]
        corr = [r for r in back if (r.get("evidence") or {}).get("verdict") == "corroborated"]
        corr_wrong = [r for r in corr if r["outcome"] == "wrong"]
        print(f"| {c} | {len(sel)} | {len(back)} | {len(correct)} | {len(wrong)} "
              f"| {len(corr)} | {len(corr_wrong)} |")
    solved = sorted(r["seconds"] for r in rows if r["outcome"] in ("correct", "wrong") and r.get("seconds"))
    if solved:
        print(f"\nmedian wall time of a handed-back patch: {solved[len(solved) // 2]:.1f} s "
              f"({len(solved)} runs)")
    for r in rows:
        if r["outcome"] in ("wrong", "unjudged"):
            print(f"{r['outcome']}: {r['bug']} ({r['bug_type']}): {r.get('why', '')}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("jsonl", help="HumanEvalPack's Python JSONL")
    m.add_argument("dir", help="where the bug trees go")
    m.add_argument("--half", choices=["even", "odd", "all"], default="all")
    m.add_argument("--budget", type=float, default=5.0, help="seconds a test may take")
    m.add_argument("--python", default=sys.executable)
    v = sub.add_parser("verdict")
    v.add_argument("dir", help="the bug trees `make` wrote")
    v.add_argument("results", help="a directory of `forq fix --json` outputs, humanevalfix-NNN.json")
    v.add_argument("--budget", type=float, default=2.0, help="seconds a call may take")
    v.add_argument("--json", action="store_true")
    v.add_argument("--python", default=sys.executable)
    args = p.parse_args()
    make(args) if args.cmd == "make" else verdict(args)


if __name__ == "__main__":
    main()
