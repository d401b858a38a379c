#!/usr/bin/env bash
# Runs every `sh` block of docs/writing-an-adapter.md, in order, in one
# shell from the repository's root, so the guide's commands stay true.
# Background jobs a block starts are stopped when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."
guide=docs/writing-an-adapter.md
script=$(mktemp)
trap 'rm -f "$script"; jobs -p | xargs -r kill 2>/dev/null || true' EXIT
{
    echo 'set -euo pipefail'
    awk '/^```sh$/ { inside = 1; next } /^```$/ { inside = 0; next } inside' "$guide"
} > "$script"
blocks=$(grep -c '^```sh$' "$guide")
echo "running the $blocks command blocks of $guide"
# shellcheck disable=SC1090
source "$script"
