#!/usr/bin/env bash
# Builds OUT/NAME, one git repository per example in examples/ (its files
# as forq's repository tracks them, one commit with a fixed author and
# date), so the commits — and examples/eval/instances.jsonl's base_commit
# — are the same on every machine:
#
#   scripts/example_repos.sh /tmp/repos
#   forq eval examples/eval/instances.jsonl --repos /tmp/repos --out /tmp/eval
#
# examples/eval/instances.jsonl was made from these repositories by
#   for r in /tmp/repos/*; do
#     scripts/make_instances.py "$r" --name "forq-examples/$(basename "$r")"
#   done > examples/eval/instances.jsonl
set -euo pipefail
out=${1:?usage: example_repos.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export GIT_AUTHOR_NAME=forq GIT_AUTHOR_EMAIL=forq@localhost GIT_AUTHOR_DATE="2026-01-01T00:00:00Z"
export GIT_COMMITTER_NAME=forq GIT_COMMITTER_EMAIL=forq@localhost GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
for dir in "$root"/examples/*/; do
  name=$(basename "$dir")
  [ -f "$dir/ISSUE.md" ] || continue
  dest="$out/$name"
  rm -rf "$dest"
  mkdir -p "$dest"
  # The tracked files only (no build output, no .forq).
  (cd "$root" && git ls-files -z "examples/$name") | while IFS= read -r -d '' f; do
    rel=${f#examples/"$name"/}
    mkdir -p "$dest/$(dirname "$rel")"
    cp --preserve=mode "$root/$f" "$dest/$rel"
  done
  git -C "$dest" -c init.defaultBranch=main init -q
  git -C "$dest" add -A
  git -C "$dest" -c core.hooksPath=/dev/null -c commit.gpgsign=false commit -q -m "example $name"
done
