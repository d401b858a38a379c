#!/usr/bin/env bash
# One allocation through the E2B kind, in this process the way Core runs a
# direct kind: builds the components, then runs host/examples/e2b_walk.rs,
# which prints and checks every step (selection discovery, pinned Create,
# GetInfo, RunCommand, Renew, Kill, GetInfo, a listing proving absence) and
# exits non-zero at the first unexpected answer.
#
#   scripts/e2b-walk.sh           against the fake E2B (REST API and envd
#                                 over TLS; its sandbox a container on the
#                                 engine OAC_DOCKER_SOCKET names, if set);
#                                 CI runs this
#   E2B_API_KEY=e2b_… E2B_TEMPLATE=<template>:<build UUID> \
#   scripts/e2b-walk.sh --real    against E2B itself: one billed sandbox,
#                                 killed at the end
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== building the components (cargo xtask build-plugins)"
cargo xtask build-plugins >target/e2b-walk-build.log 2>&1 || { cat target/e2b-walk-build.log; exit 1; }
echo "== one allocation through the e2b kind (${1:---fake})"
cargo build -q --workspace --examples
target/debug/examples/e2b_walk target/plugins "$@"
