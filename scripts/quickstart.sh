#!/usr/bin/env bash
# The README's first command: one node, end to end, on this machine.
#
#   1. builds the provider components (`cargo xtask build-plugins`) and the binaries;
#   2. uses the Docker Engine at $OAC_DOCKER_SOCKET, or starts a private one
#      (scripts/docker-engine.sh: its own socket and data root);
#   3. imports the test runtime image and assembles the seccomp profile;
#   4. writes a node configuration and token under $OAC_QUICKSTART_DIR
#      (default target/quickstart) and starts `sandbox-host serve`;
#   5. walks one allocation through create -> get-info -> run-command -> kill
#      with `sandbox-host client walk`, printing each step;
#   6. keeps serving until Ctrl-C (or exits right away with --once), then
#      stops the node and the engine it started.
#
# Usage: scripts/quickstart.sh [--once]
#   OAC_DOCKER_SOCKET      an existing Engine (API >= 1.45) to use instead
#   OAC_SECCOMP_UPSTREAM   directory with moby-default-65adc7e.json and LICENSE
#                          (default ../shared/seccomp-upstream)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
once=false
case "${1:-}" in
    --once) once=true ;;
    "") ;;
    *) echo "usage: scripts/quickstart.sh [--once]" >&2; exit 2 ;;
esac

say() { printf '\n== %s\n' "$*"; }
die() { echo "quickstart: $*" >&2; exit 1; }

dir=${OAC_QUICKSTART_DIR:-$root/target/quickstart}
upstream=${OAC_SECCOMP_UPSTREAM:-$root/../shared/seccomp-upstream}
serve_pid=""
started_engine=false

cleanup() {
    trap - EXIT INT TERM
    if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
        kill -INT "$serve_pid" 2>/dev/null || true
        wait "$serve_pid" 2>/dev/null || true
    fi
    if $started_engine; then
        echo "quickstart: stopping the private Docker Engine"
        scripts/docker-engine.sh stop >/dev/null 2>&1 || true
    fi
}
trap cleanup EXIT
trap 'echo; echo "quickstart: interrupted"; exit 130' INT TERM

say "toolchain and packages"
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
if [ ! -x /bin/busybox ]; then
    # The test runtime image is built from Debian's static busybox.
    [ "$(id -u)" = 0 ] || die "install busybox-static (apt-get install busybox-static)"
    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q busybox-static
fi
[ -f "$upstream/moby-default-65adc7e.json" ] ||
    die "no upstream seccomp profile in $upstream (set OAC_SECCOMP_UPSTREAM)"

say "components and binaries"
cargo xtask build-plugins
cargo build -q -p sandbox-host -p contract-suite --bins
host=target/debug/sandbox-host

say "Docker Engine"
if [ -z "${OAC_DOCKER_SOCKET:-}" ] && ! scripts/docker-engine.sh status >/dev/null 2>&1; then
    started_engine=true
fi
socket=$(scripts/docker-engine.sh start | tail -n 1)
scripts/docker-engine.sh status

say "runtime image and seccomp profile"
image=$(target/debug/runtime-image --engine-socket "$socket")
echo "runtime image $image"
"$host" seccomp --upstream "$upstream/moby-default-65adc7e.json" \
    --license "$upstream/LICENSE" --out "$dir/seccomp"

say "node configuration"
mkdir -p "$dir"
token="$dir/token"
if [ ! -s "$token" ]; then
    (umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$token")
fi
chmod 600 "$token"
cat >"$dir/node.toml" <<EOF
token_file = "$token"
installation = "quickstart"
plugins = "$root/target/plugins"
max_in_flight = 16

[listen]
unix = "$dir/node.sock"

[log]
level = "info"

[kinds.docker]
docker_socket = "$socket"

# The host's container policy: every container of the kind gets it.
[kinds.docker.container_policy]
image = "$image"
network = "none"
seccomp_profile = "$dir/seccomp/seccomp.json"
cpus = 1
memory_mib = 256

# The adapter's own configuration.
[kinds.docker.configuration]
extra_hosts = ["core.internal:10.0.0.1"]
EOF
echo "$dir/node.toml"

say "serve"
"$host" serve --config "$dir/node.toml" &
serve_pid=$!
remote=(--unix "$dir/node.sock" --token-file "$token")
for _ in $(seq 100); do
    [ -S "$dir/node.sock" ] && "$host" client "${remote[@]}" kinds >/dev/null 2>&1 && break
    kill -0 "$serve_pid" 2>/dev/null || die "serve exited; see its messages above"
    sleep 0.2
done
"$host" client "${remote[@]}" health

say "one allocation through the node: create -> get-info -> run-command -> kill"
"$host" client "${remote[@]}" walk docker

if $once; then
    say "done (--once): stopping"
    exit 0
fi
say "the node is serving on $dir/node.sock; try:"
echo "  $host client ${remote[*]} walk docker"
echo "Ctrl-C stops the node$($started_engine && echo ' and the private engine')."
wait "$serve_pid"
