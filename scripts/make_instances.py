#!/usr/bin/env python3
"""Benchmark instances in SWE-bench's format from a git repository, judged
by forq's own test runner (`forq bootstrap --json`), one JSON object per
line on stdout, for `forq eval`.

    make_instances.py REPO --commits A..B [--name OWNER/NAME]
        One instance per commit C in A..B (first parents) whose change
        touches both tests and code: base_commit is C's parent, patch its
        code part, test_patch its test part, problem_statement its message;
        FAIL_TO_PASS are the tests that do not pass on the parent with the
        test patch and pass on C, PASS_TO_PASS those that pass on both. A
        commit whose change fixes no test is left out (said on stderr).

    make_instances.py REPO [--name OWNER/NAME] [--issue FILE]
        One instance of HEAD as it is: its failing tests are FAIL_TO_PASS,
        its passing ones PASS_TO_PASS, the test patch is empty, and the
        problem statement is FILE's text (default ISSUE.md in REPO).

Options: --forq BIN (default: forq on PATH), --backend native|docker|host
(default auto). Needs git. The repository itself is never written: each
state is a fresh worktree-free checkout in a temporary directory.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

TEST_PATH = re.compile(
    r"(^|/)(tests?|spec|__tests__)(/|$)|(^|/)test_[^/]*$|_test\.[^/]+$|\.(test|spec)\.[^/]+$|_spec\.[^/]+$"
)


def git(repo, *args, input=None):
    out = subprocess.run(
        ["git", "-C", repo, *args],
        input=input,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"make_instances: git {' '.join(args)} failed in {repo}: {out.stderr.strip()}")
    return out.stdout


def tests_of(repo, rev, patch, opts):
    """The per-test outcomes of REPO at REV with PATCH applied, by forq's runner."""
    with tempfile.TemporaryDirectory(prefix="forq-instances-") as tmp:
        work = os.path.join(tmp, "w")
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", repo, work], check=True)
        git(work, "checkout", "-q", "--detach", rev)
        if patch.strip():
            git(work, "apply", "--whitespace=nowarn", input=patch)
        out = subprocess.run(
            [opts.forq, "bootstrap", work, "--json", "--no-cache", "--backend", opts.backend],
            capture_output=True,
            text=True,
        )
        try:
            record = json.loads(out.stdout)
        except json.JSONDecodeError:
            raise SystemExit(f"make_instances: forq bootstrap gave no record for {rev}: {out.stderr.strip()}")
        return record.get("tests", {})


def split(diff):
    """A unified diff's file sections, split into (code, tests)."""
    code, tests = [], []
    for section in re.split(r"(?m)^(?=diff --git )", diff):
        if not section.strip():
            continue
        path = re.match(r"diff --git a/(\S+)", section)
        (tests if path and TEST_PATH.search(path.group(1)) else code).append(section)
    return "".join(code), "".join(tests)


def instance(opts, iid, base, statement, patch, test_patch, before, after):
    f2p = sorted(t for t, o in after.items() if o == "passed" and before.get(t) != "passed")
    p2p = sorted(t for t, o in after.items() if o == "passed" and before.get(t) == "passed")
    return {
        "instance_id": iid,
        "repo": opts.name,
        "base_commit": base,
        "problem_statement": statement,
        "patch": patch,
        "test_patch": test_patch,
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
        "version": "",
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("repo")
    p.add_argument("--commits")
    p.add_argument("--name")
    p.add_argument("--issue")
    p.add_argument("--forq", default="forq")
    p.add_argument("--backend", default="auto")
    opts = p.parse_args()
    repo = os.path.abspath(opts.repo)
    opts.name = opts.name or os.path.basename(repo.rstrip("/"))
    short = opts.name.split("/")[-1]
    if not opts.commits:
        head = git(repo, "rev-parse", "HEAD").strip()
        issue = opts.issue or os.path.join(repo, "ISSUE.md")
        statement = open(issue).read() if os.path.exists(issue) else git(repo, "log", "-1", "--format=%B")
        outcomes = tests_of(repo, head, "", opts)
        f2p = sorted(t for t, o in outcomes.items() if o != "passed")
        p2p = sorted(t for t, o in outcomes.items() if o == "passed")
        if not f2p:
            raise SystemExit(f"make_instances: every test of {repo} passes at HEAD: nothing to fix")
        print(json.dumps({
            "instance_id": f"{short}-{head[:7]}",
            "repo": opts.name,
            "base_commit": head,
            "problem_statement": statement,
            "patch": "",
            "test_patch": "",
            "FAIL_TO_PASS": f2p,
            "PASS_TO_PASS": p2p,
            "version": "",
        }))
        return
    for commit in git(repo, "rev-list", "--reverse", "--first-parent", opts.commits).split():
        parents = git(repo, "rev-list", "--parents", "-n", "1", commit).split()[1:]
        if not parents:
            continue
        base = parents[0]
        code, tests = split(git(repo, "diff", "--binary", base, commit))
        if not code.strip() or not tests.strip():
            print(f"make_instances: {commit[:7]} skipped: it does not change both code and tests", file=sys.stderr)
            continue
        before = tests_of(repo, base, tests, opts)
        after = tests_of(repo, commit, "", opts)
        found = instance(opts, f"{short}-{commit[:7]}", base, git(repo, "log", "-1", "--format=%B", commit), code, tests, before, after)
        if not found["FAIL_TO_PASS"]:
            print(f"make_instances: {commit[:7]} skipped: no test goes from failing to passing", file=sys.stderr)
            continue
        print(json.dumps(found))


if __name__ == "__main__":
    main()
