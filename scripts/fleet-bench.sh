#!/usr/bin/env bash
# Workers side by side, one run each (run as root, from the repository):
# the same queue of N fix runs on examples/calc (native backend, no model,
# 2 jobs per worker) burned down by 1 worker on a SQLite store, then by 1,
# 2 and 4 workers on a shared PostgreSQL store (the scratch cluster of
# scripts/postgres-scratch.sh). For each: wall time, runs per minute, the
# workers' claim latency (ms from asking the store to having runs, p50 and
# p95 over every claim that returned runs) and store writes per second
# (events and checkpoints written, over the wall time). Prints one table;
# ROWS=1 appends the rows to benches/results.csv.
#
#   N=24 scripts/fleet-bench.sh      (FORQ=target/release/forq for a release build)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-24}
FORQ=${FORQ:-target/debug/forq}
FORQ=$(readlink -f "$FORQ")
admin=$(scripts/postgres-scratch.sh)
work=$(mktemp -d /var/tmp/forq-fleet-bench.XXXX)
trap 'rm -rf "$work"' EXIT
cp -r examples/calc "$work/calc"
mkdir -p "$work/issues"
for i in $(seq 1 "$N"); do
  printf -- '---\nid: b%s\n---\n# add() subtracts\n' "$i" > "$work/issues/b$i.md"
done
commit=$(git rev-parse --short HEAD)
printf '%-22s %8s %8s %12s %14s %9s\n' setup wall_s runs/min claim_p50_ms claim_p95_ms writes/s
one() { # name store workers
  local name=$1 store=$2 workers=$3
  local state="$work/$name"
  mkdir -p "$state"
  "$FORQ" queue --enqueue --issues "$work/issues" --repo "$work/calc" --state "$state/q" --store "$store" >/dev/null
  local start end
  start=$(date +%s.%N)
  local pids=()
  for w in $(seq 1 "$workers"); do
    "$FORQ" worker --name "$name-$w" --jobs 2 --poll 0.2 --exit-when-idle --backend native \
      --state "$state/w$w" --store "$store" --json > "$state/w$w.json" 2> "$state/w$w.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  end=$(date +%s.%N)
  python3 - "$state" "$store" "$start" "$end" "$N" "$name" <<'PY'
import glob, json, statistics, subprocess, sys
state, store, start, end, n, name = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
claims = []
for f in glob.glob(f"{state}/w*.json"):
    claims += json.load(open(f))["claim_ms"]
claims.sort()
def pct(p):
    return claims[min(len(claims) - 1, int(round(p / 100 * (len(claims) - 1))))] if claims else float("nan")
q = "SELECT (SELECT COUNT(*) FROM events) + (SELECT COUNT(*) FROM checkpoints), (SELECT COUNT(*) FROM runs WHERE state = 'patch_ready')"
others = "SELECT state || ': ' || reason FROM runs WHERE state <> 'patch_ready'"
if store.startswith("postgres"):
    out = subprocess.run(["psql", "-Atc", q, store], capture_output=True, text=True).stdout
    writes, ready = out.strip().split("|")
    stray = subprocess.run(["psql", "-Atc", others, store], capture_output=True, text=True).stdout.splitlines()
else:
    import sqlite3
    db = sqlite3.connect(store)
    writes, ready = db.execute(q).fetchone()
    stray = [r[0] for r in db.execute(others)]
for line in stray:
    print(f"    not patch_ready: {line[:300]}", file=sys.stderr)
wall = end - start
print(f"{name:<22} {wall:8.1f} {n / wall * 60:8.1f} {pct(50):12.1f} {pct(95):14.1f} {int(writes) / wall:9.0f}   ({ready} of {n} patch_ready)")
with open(f"{state}/row", "w") as fh:
    fh.write(json.dumps({"name": name, "wall": wall, "rpm": n / wall * 60, "p50": pct(50), "p95": pct(95), "writes": int(writes) / wall, "ready": int(ready)}))
PY
}
one sqlite-1-worker "$work/sqlite/forq.db" 1
for w in 1 2 4; do
  db=forq_bench_${w}_$$
  psql -q "$admin" -c "CREATE DATABASE $db"
  url="${admin%/*}/$db"
  one "postgres-$w-worker$([ "$w" = 1 ] || echo s)" "$url" "$w"
  psql -q "$admin" -c "DROP DATABASE $db WITH (FORCE)"
done
if [ "${ROWS:-0}" = 1 ]; then
  python3 - "$work" "$commit" "$N" "$FORQ" <<'PY'
import csv, datetime, glob, json, sys
work, commit, n, forq = sys.argv[1:5]
build = "release" if "/release/" in forq else "debug"
rows = [json.load(open(f)) for f in sorted(glob.glob(f"{work}/*/row"))]
with open("benches/results.csv", "a", newline="") as fh:
    w = csv.writer(fh)
    for r in rows:
        w.writerow([datetime.date.today().isoformat(), commit, "2-core Debian 12 VM, 24 GiB", "fleet",
                    f"{r['name']}: runs/min, claim p50 / p95 ms, store writes/s ({n} fix runs on examples/calc, 2 jobs a worker, {r['ready']} patch_ready)",
                    f"{r['rpm']:.1f}; {r['p50']:.1f} / {r['p95']:.1f}; {r['writes']:.0f}",
                    f"N={n} scripts/fleet-bench.sh ({build} build, native backend, as root)"])
PY
fi
