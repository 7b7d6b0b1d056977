#!/usr/bin/env bash
# The bootstrap gate on real projects fetched from the package registries
# (PyPI source distributions, crates from crates.io, npm packages that ship
# their tests): verdict, tests executed and time for each, as a table.
#   FORQ: the forq binary (default: the newer of target/release/forq and
#         target/debug/forq)
#   WORK: where to fetch and unpack (default: a temporary directory)
#   BEFORE: another forq binary (an older commit's) run on each project
#         just before FORQ, its verdict and time printed beside: the same
#         machine and moment for both
#   SET: which projects: `existing` (the first 26), `shapes` (the shapes
#         of issue 38: where projects declare test dependencies, toolchain
#         drift, doctest-only crates, npm test runners and installs,
#         packages without tests) or `all` (default)
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
# The shapes: test dependencies in Poetry groups, PEP 735 groups, tox.ini
# (with test factors), nox and requirement files; an old pinned pytest;
# packages without tests; crates whose lints a newer compiler denies or
# whose tests read files the package leaves out; npm packages whose
# devDependencies pull browser runners.
pypi_shapes=(cleo==2.1.0 tomlkit==0.15.3 pastel==0.2.1 pyparsing==3.3.3 pyproject-hooks==1.3.3 exceptiongroup==1.3.2
             installer==1.1.0 markdown-it-py==4.3.0 crashtest==0.4.1 mdurl==0.1.2)
crates_shapes=(base64=0.13.0 gif=0.11.4 png=0.16.8 log=0.4.14)
npm_shapes=(stream-browserify@3.0.0 process@0.11.10 querystring-es3@0.2.1 util@0.12.5 events@3.3.0)
case "${SET:-all}" in
  existing) ;;
  shapes) pypi=("${pypi_shapes[@]}"); crates=("${crates_shapes[@]}"); npm=("${npm_shapes[@]}") ;;
  *) pypi+=("${pypi_shapes[@]}"); crates+=("${crates_shapes[@]}"); npm+=("${npm_shapes[@]}") ;;
esac

for p in "${pypi[@]}"; do
  pip download -q --no-binary :all: --no-deps -d sdists "$p" >/dev/null 2>&1 || echo "cannot fetch $p" >&2
done
# --no-same-owner: files owned by the archive's uids would be read-only to
# the sandbox's capability-less root.
for f in sdists/*.tar.gz; do tar xzf "$f" -C src --no-same-owner; done

# Crates: fetched by cargo through a throwaway manifest that depends on
# them (each under a key of its own: two versions of one crate may be asked).
mkdir -p fetch/src && echo 'fn main() {}' >fetch/src/main.rs
{ printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n'
  i=0
  for c in "${crates[@]}"; do i=$((i + 1)); printf 'c%s = { package = "%s", version = "=%s" }\n' "$i" "${c%%=*}" "${c#*=}"; done; } >fetch/Cargo.toml
(cd fetch && cargo fetch -q) || echo "cannot fetch crates" >&2
for c in "${crates[@]}"; do
  dir=$(ls -d "$HOME"/.cargo/registry/src/*/"${c%%=*}-${c#*=}" 2>/dev/null | head -n 1)
  [ -n "$dir" ] && cp -r "$dir" "src/${c%%=*}-${c#*=}"
done

for p in "${npm[@]}"; do
  (cd src && npm pack -s "$p" >/dev/null 2>&1 && mkdir -p "$p" && tar xzf ./*.tgz -C "$p" --strip-components=1 --no-same-owner --warning=no-unknown-keyword && rm -f ./*.tgz) ||
    echo "cannot fetch $p" >&2
done

# report NAME RECORD.json SUMMARY.tsv [BEFORE.json]: one row of the table
# (with the other binary's verdict and time first when given), and one line
# of the summary.
report() {
  python3 - "$@" <<'PY'
import json, sys
name, path, summary = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{name:<22} error: {e}")
    sys.exit()
stack = next((s for s in r["stacks"] if s["verdict"] == "bootstrapped"), r["stacks"][-1] if r["stacks"] else None)
what = f'{stack["name"]}: {stack["reason"][:90]}' if stack else r["reason"][:90]
# The rule that made it work: a retry's, else where the tests' needs were read.
rule = "-"
if r["reason"].startswith("no tests in the package"):
    rule = "no tests shipped"
elif stack and stack.get("retry"):
    rule = stack["retry"].split(":")[0]
elif stack and stack.get("declared"):
    rule = "declared: " + "; ".join(d.split(":")[0] for d in stack["declared"])
before = ""
if len(sys.argv) > 4:
    try:
        b = json.load(open(sys.argv[4]))
        before = f'{b["verdict"]:<22} {b["tests_executed"]:>8} {b["duration_ms"]/1000:>8.1f}  '
    except Exception as e:
        before = f'{"error":<22} {"":>8} {"":>8}  '
print(f'{name:<22} {before}{r["verdict"]:<22} {r["tests_executed"]:>8} {r["passed"]:>7} {r["failed"]:>7} {r["duration_ms"]/1000:>8.1f}  {rule:<28} {what}')
with open(summary, "a") as out:
    out.write(f'{name}\t{r["verdict"]}\t{r["tests_executed"]}\n')
PY
}

if [ -n "${BEFORE:-}" ]; then
  printf '%-22s %-22s %8s %8s  ' project "verdict before" executed seconds
  printf '%-22s %8s %7s %7s %8s  %-28s %s\n' verdict executed passed failed seconds rule stack
else
  printf '%-22s %-22s %8s %7s %7s %8s  %-28s %s\n' project verdict executed passed failed seconds rule stack
fi
[ -n "$fallback" ] && echo "(+ fallback: the same project with the agentic fallback, $fallback)"
: >summary.tsv
: >summary-fallback.tsv
for dir in src/*/; do
  name=$(basename "$dir")
  if [ -n "${BEFORE:-}" ]; then
    "$BEFORE" bootstrap "$dir" --no-cache --offline --json "$@" >"out/$name.before.json" 2>"out/$name.before.err"
  fi
  "$forq" bootstrap "$dir" --no-cache --offline --json "$@" >"out/$name.json" 2>"out/$name.err"
  if [ -n "${BEFORE:-}" ]; then
    report "$name" "out/$name.json" summary.tsv "out/$name.before.json"
  else
    report "$name" "out/$name.json" summary.tsv
  fi
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
