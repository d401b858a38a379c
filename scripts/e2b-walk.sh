#!/usr/bin/env bash
# One allocation through the E2B kind against the fake E2B (REST API and
# envd over TLS), in this process the way Core runs a direct kind: builds
# the components, then runs host/examples/e2b_walk.rs, which prints every
# operation's answer and the requests E2B saw.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== building the components (cargo xtask build-plugins)"
cargo xtask build-plugins >target/e2b-walk-build.log 2>&1 || { cat target/e2b-walk-build.log; exit 1; }
echo "== one allocation through the e2b kind against the fake E2B"
cargo build -q --workspace --examples
target/debug/examples/e2b_walk target/plugins
