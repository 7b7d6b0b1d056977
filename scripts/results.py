#!/usr/bin/env python3
"""Regenerate benches/RESULTS.md from benches/results.csv.

Every measurement forq reports lives as one row of benches/results.csv:
the date it was measured, the commit measured, the machine, the bench, the
figure, its value and the command that measured it. This script checks
each row and writes the tables of benches/RESULTS.md, one per bench, newest
first. With --check it writes nothing and exits 1 when RESULTS.md is not
what the rows give (the test suite runs it so, so the two cannot drift).

    python3 scripts/results.py           # rewrite benches/RESULTS.md
    python3 scripts/results.py --check   # exit 1 when it is out of date
"""

import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CSV = ROOT / "benches" / "results.csv"
OUT = ROOT / "benches" / "RESULTS.md"
COLUMNS = ["date", "commit", "machine", "bench", "figure", "value", "command"]

# The benches in the order RESULTS.md shows them, each with what it
# measures and where its notes are.
BENCHES = {
    "sandbox": ("`forq sandbox bench`: create, fork, exec, diff of each backend", "sandbox/README.md"),
    "graph": ("the code graph on sympy 1.13.3, and its definitions' accuracy", "graph/README.md"),
    "bootstrap": ("the bootstrap gate on real projects", "bootstrap/README.md"),
    "golden": ("`forq golden bench`: cold installs against forks of a golden", "golden/README.md"),
    "search": ("the fix search: orders, repair spaces, real bugs", "search/README.md"),
    "eval": ("`forq eval` over the bundled instances", "eval/README.md"),
    "queue": ("`forq queue` on the examples and on real projects", "queue/README.md"),
    "fleet": ("`forq worker`s on a shared store: 1 on SQLite, 1, 2 and 4 on PostgreSQL", "fleet/README.md"),
    "serve": ("`forq serve bench`, measured from outside", "serve/README.md"),
    "models": ("models as they are: context windows and local servers", "models/README.md"),
}


def rows():
    with CSV.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        if header != COLUMNS:
            sys.exit(f"{CSV}: the header must be {','.join(COLUMNS)}, not {','.join(header)}")
        out = []
        for number, row in enumerate(reader, start=2):
            if len(row) != len(COLUMNS):
                sys.exit(f"{CSV}:{number}: {len(row)} fields, {len(COLUMNS)} expected")
            record = dict(zip(COLUMNS, row))
            problems = []
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", record["date"]):
                problems.append("date is not YYYY-MM-DD")
            if not re.fullmatch(r"[0-9a-f]{7,40}", record["commit"]):
                problems.append("commit is not a hash")
            if record["bench"] not in BENCHES:
                problems.append(f"bench {record['bench']!r} is not one of {', '.join(BENCHES)}")
            for field in ("machine", "figure", "value", "command"):
                if not record[field].strip():
                    problems.append(f"{field} is empty")
            if problems:
                sys.exit(f"{CSV}:{number}: " + "; ".join(problems))
            out.append(record)
        return out


def cell(text):
    return text.replace("|", "\\|")


def render(records):
    lines = [
        "# Results",
        "",
        "Every figure forq reports, each with the date it was measured, the",
        "commit measured, the machine and the command. Generated from",
        "`benches/results.csv` by `python3 scripts/results.py` (the test suite",
        "fails when this file is not what the rows give): add a row there, not",
        "here. A figure that could not be measured again is removed, not kept.",
    ]
    for bench, (what, notes) in BENCHES.items():
        mine = [r for r in records if r["bench"] == bench]
        if not mine:
            continue
        # Newest first; rows of one date keep the file's order.
        mine.sort(key=lambda r: r["date"], reverse=True)
        lines += ["", f"## {bench}", "", f"{what[0].upper()}{what[1:]}; notes in [{notes}]({notes}).", ""]
        lines.append("| date | commit | figure | value | machine | command |")
        lines.append("|---|---|---|---|---|---|")
        for r in mine:
            lines.append(
                f"| {r['date']} | {r['commit']} | {cell(r['figure'])} | {cell(r['value'])} "
                f"| {cell(r['machine'])} | `{cell(r['command'])}` |"
            )
    return "\n".join(lines) + "\n"


def main():
    text = render(rows())
    if sys.argv[1:] == ["--check"]:
        current = OUT.read_text() if OUT.exists() else ""
        if current != text:
            sys.exit(f"{OUT} is out of date: run python3 scripts/results.py")
        return
    if sys.argv[1:]:
        sys.exit(__doc__)
    OUT.write_text(text)


if __name__ == "__main__":
    main()
