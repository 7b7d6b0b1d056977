#!/usr/bin/env bash
# The bootstrap gate on real projects fetched from the package registries
# (PyPI source distributions, crates from crates.io, npm packages that ship
# their tests): verdict, tests executed and time for each, as a table.
#   FORQ: the forq binary (default: the newer of target/release/forq and
#         target/debug/forq)
#   WORK: where to fetch and unpack (default: a temporary directory)
# Usage: scripts/bootstrap-quality.sh [--backend native|docker]
#          [--fallback-record DIR | --fallback-replay DIR]
# Each project runs deterministically (--offline). With --fallback-record,
# each one that is not bootstrapped runs again with the agentic fallback on
# the configured model (forq agent run's provider flags and keys), its
# replies recorded to DIR/<project>.jsonl; with --fallback-replay, those
# recordings play instead of a model. Both are printed side by side.
set -uo pipefail
fallback=""
fallback_dir=""
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --fallback-record | --fallback-replay)
      fallback=$1
      mkdir -p "$2" && fallback_dir=$(cd "$2" && pwd)
      shift 2
      ;;
    *) args+=("$1"); shift ;;
  esac
done
set -- ${args[@]+"${args[@]}"}
root=$(cd "$(dirname "$0")/.." && pwd)
forq=$root/target/release/forq
[ "$root/target/debug/forq" -nt "$forq" ] && forq=$root/target/debug/forq
forq=${FORQ:-$forq}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work/src" "$work/out"
cd "$work" || exit 1

pypi=(six==1.16.0 idna==3.10 toolz==1.0.0 more-itertools==10.5.0 iniconfig==2.0.0 tomli==2.2.1 attrs==24.2.0 packaging==24.2
      markupsafe==2.1.5 jmespath==1.0.1 colorama==0.4.6 sortedcontainers==2.4.0 wcwidth==0.2.13)
crates=(itoa=1.0.11 semver=1.0.23 either=1.13.0 hex=0.4.3 fnv=1.0.7 memchr=2.7.4 smallvec=1.13.2 bitflags=2.6.0)
npm=(minimist@1.2.8 qs@6.13.0 deep-equal@2.2.3 object-inspect@1.13.2 has-symbols@1.0.3)

for p in "${pypi[@]}"; do
  pip download -q --no-binary :all: --no-deps -d sdists "$p" >/dev/null 2>&1 || echo "cannot fetch $p" >&2
done
# --no-same-owner: files owned by the archive's uids would be read-only to
# the sandbox's capability-less root.
for f in sdists/*.tar.gz; do tar xzf "$f" -C src --no-same-owner; done

# Crates: fetched by cargo through a throwaway manifest that depends on them.
mkdir -p fetch/src && echo 'fn main() {}' >fetch/src/main.rs
{ printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n'
  for c in "${crates[@]}"; do printf '%s = "=%s"\n' "${c%%=*}" "${c#*=}"; done; } >fetch/Cargo.toml
(cd fetch && cargo fetch -q) || echo "cannot fetch crates" >&2
for c in "${crates[@]}"; do
  dir=$(ls -d "$HOME"/.cargo/registry/src/*/"${c%%=*}-${c#*=}" 2>/dev/null | head -n 1)
  [ -n "$dir" ] && cp -r "$dir" "src/${c%%=*}-${c#*=}"
done

for p in "${npm[@]}"; do
  (cd src && npm pack -s "$p" >/dev/null 2>&1 && mkdir -p "$p" && tar xzf ./*.tgz -C "$p" --strip-components=1 --no-same-owner && rm -f ./*.tgz) ||
    echo "cannot fetch $p" >&2
done

# report NAME RECORD.json SUMMARY.tsv: one row of the table, and one line
# of the summary.
report() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
name, path, summary = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{name:<22} error: {e}")
    sys.exit()
stack = next((s for s in r["stacks"] if s["verdict"] == "bootstrapped"), r["stacks"][-1] if r["stacks"] else None)
what = f'{stack["name"]}: {stack["reason"][:90]}' if stack else r["reason"][:90]
print(f'{name:<22} {r["verdict"]:<22} {r["tests_executed"]:>8} {r["passed"]:>7} {r["failed"]:>7} {r["duration_ms"]/1000:>8.1f}  {what}')
with open(summary, "a") as out:
    out.write(f'{name}\t{r["verdict"]}\t{r["tests_executed"]}\n')
PY
}

printf '%-22s %-22s %8s %7s %7s %8s  %s\n' project verdict executed passed failed seconds stack
[ -n "$fallback" ] && echo "(+ fallback: the same project with the agentic fallback, $fallback)"
: >summary.tsv
: >summary-fallback.tsv
for dir in src/*/; do
  name=$(basename "$dir")
  "$forq" bootstrap "$dir" --no-cache --offline --json "$@" >"out/$name.json" 2>"out/$name.err"
  report "$name" "out/$name.json" summary.tsv
  verdict=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["verdict"])' "out/$name.json" 2>/dev/null)
  if [ -n "$fallback" ] && [ "$verdict" != bootstrapped ]; then
    rec="$fallback_dir/$name.jsonl"
    out="out/$name.agentic.json"
    if [ "$fallback" = --fallback-record ]; then
      "$forq" bootstrap "$dir" --no-cache --json --agentic-record "$rec" "$@" >"$out" 2>"out/$name.agentic.err"
    elif [ -f "$rec" ]; then
      "$forq" bootstrap "$dir" --no-cache --json --provider replay --replay "$rec" "$@" >"$out" 2>"out/$name.agentic.err"
    else
      printf '{"verdict": "no-recording", "tests_executed": 0, "passed": 0, "failed": 0, "duration_ms": 0, "stacks": [], "reason": "no %s"}\n' "$rec" >"$out"
    fi
    report "  + fallback" "$out" summary-fallback.tsv
  fi
done
# The share bootstrapped, and false greens: a green verdict without an
# executed test (the goal: none, ever); with the fallback, the same with its
# results for the projects the deterministic run left.
python3 - summary.tsv summary-fallback.tsv <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
green = [r for r in rows if r[1] == "bootstrapped"]
false_green = [r[0] for r in green if int(r[2]) == 0]
print(f"deterministic: {len(green)} of {len(rows)} bootstrapped ({100 * len(green) / max(len(rows), 1):.0f}%); "
      f"false greens: {len(false_green)}{' (' + ', '.join(false_green) + ')' if false_green else ''}")
extra = [l.rstrip("\n").split("\t") for l in open(sys.argv[2]) if l.strip()]
if extra:
    more = [r for r in extra if r[1] == "bootstrapped"]
    false_more = [r for r in more if int(r[2]) == 0]
    total = len(green) + len(more)
    print(f"with the fallback: {total} of {len(rows)} bootstrapped ({100 * total / max(len(rows), 1):.0f}%); "
          f"false greens: {len(false_green) + len(false_more)}")
PY
echo "records: $work/out"
