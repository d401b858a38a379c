#!/usr/bin/env bash
# Cold start of `sandbox-host serve` with every shipped kind (docker, e2b,
# steerable): from exec to the first answered call (`client kinds`), N
# times without a compile cache and N times with a warm one, in one run.
#
#   OAC_DOCKER_SOCKET=/tmp/oac-docker/docker.sock scripts/cold-start.sh [N]
#
# N defaults to 5. The docker kinds check the engine at start (start one
# with scripts/docker-engine.sh); e2b gets a dummy credential and is not
# reached. Times include the `client` process that polls. Also prints the
# node's resident memory at its first answer. OAC_HOST_BIN times another
# build of `sandbox-host` (default target/release/sandbox-host).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
socket="${OAC_DOCKER_SOCKET:?set OAC_DOCKER_SOCKET to the socket of a running engine}"
bin="${OAC_HOST_BIN:-target/release/sandbox-host}"
[ -x "$bin" ] || cargo build --release --bin sandbox-host >&2
[ -f target/plugins/docker.wasm ] || cargo xtask build-plugins >&2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf 'cold-start-token-0123456789\n' > "$work/token"
printf '{"api_key":"e2b_cold_start"}\n' > "$work/e2b.key"
printf '{"defaultAction":"SCMP_ACT_ERRNO"}\n' > "$work/seccomp.json"
chmod 600 "$work/token" "$work/e2b.key"
engine_kind() { # $1 = kind: a kind that reaches the engine, under a policy
  cat <<TOML
[kinds.$1]
docker_socket = "$socket"
[kinds.$1.container_policy]
image = "sha256:$(printf '0%.0s' $(seq 64))"
network = "none"
seccomp_profile = "$work/seccomp.json"
cpus = 1.0
memory_mib = 256
TOML
}
write_config() { # $1 = extra top-level line
  {
    cat <<TOML
$1
token_file = "$work/token"
installation = "cold-start"
plugins = "$PWD/target/plugins"
state_dir = "$work/state"
[listen]
unix = "$work/node.sock"
[kinds.e2b]
credential_file = "$work/e2b.key"
[kinds.e2b.configuration]
template = "oac-runtime:cold-start"
api_url = "https://api.e2b-fixture.test"
domain = "e2b-fixture.test"
cpu_count = 2
memory_mb = 1024
TOML
    engine_kind docker
    engine_kind steerable
  } > "$work/node.toml"
}
# Milliseconds from exec to the first answered `client kinds`, and the
# node's resident memory (KiB) at that moment.
one_start() {
  local start end pid rss
  start=$(date +%s%N)
  "$bin" serve --config "$work/node.toml" 2>"$work/serve.log" & pid=$!
  until "$bin" client --unix "$work/node.sock" --token-file "$work/token" kinds >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || { echo "serve exited:" >&2; cat "$work/serve.log" >&2; exit 1; }
  done
  end=$(date +%s%N)
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status")
  kill -TERM "$pid"; wait "$pid" || true
  echo "$(( (end - start) / 1000000 )) $rss"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
write_config ""
cold_runs=$(for _ in $(seq "$runs"); do one_start; done)
write_config "compile_cache = \"$work/cache\""
one_start >/dev/null # fills the cache
warm_runs=$(for _ in $(seq "$runs"); do one_start; done)
cold=$(cut -d' ' -f1 <<<"$cold_runs" | median)
warm=$(cut -d' ' -f1 <<<"$warm_runs" | median)
echo "cold start, exec to first answer (median of $runs): no cache ${cold} ms, compile cache ${warm} ms"
echo "node RSS at its first answer (median): no cache $(cut -d' ' -f2 <<<"$cold_runs" | median) KiB, compile cache $(cut -d' ' -f2 <<<"$warm_runs" | median) KiB"
awk -v a="$warm" -v b="$cold" 'BEGIN { if (b > 0) printf "ratio cached / uncached: %.2f\n", a / b }'
