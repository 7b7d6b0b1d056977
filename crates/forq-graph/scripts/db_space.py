#!/usr/bin/env python3
"""Where an index's bytes go: each table with its indexes, largest first.

    python3 crates/forq-graph/scripts/db_space.py REPO/.forq/graph.db

Reads SQLite's dbstat table (Python's sqlite3 has it on Debian); the
database is opened read-only, so a running forq is not disturbed.
"""
import sqlite3
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    owner = {name: table for name, table in
             db.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')")}
    sizes: dict[str, list[int]] = {}
    for name, size in db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
        table = owner.get(name, name)
        rows = sizes.setdefault(table, [0, 0])
        rows[0 if name == table else 1] += size
    total = sum(a + b for a, b in sizes.values())
    print(f"{'table':<14} {'rows':>10} {'table MB':>9} {'index MB':>9} {'share':>6}")
    for table, (data, index) in sorted(sizes.items(), key=lambda kv: -sum(kv[1])):
        try:
            rows = db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
        except sqlite3.Error:
            rows = 0
        print(f"{table:<14} {rows:>10} {data / 1e6:>9.1f} {index / 1e6:>9.1f} {(data + index) / total:>6.0%}")
    print(f"{'total':<14} {'':>10} {total / 1e6:>9.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
