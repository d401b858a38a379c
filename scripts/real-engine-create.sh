#!/usr/bin/env bash
# Create -> running on a real Docker Engine: through the node (`sandbox-host
# client call docker create`) against the same container started directly,
# N times each, alternating, in one run. Prints each time, the medians and
# their ratio. "Directly" is what `docker volume create`, `docker create`
# with the node's container's own Config and HostConfig, two `docker cp` of
# the same bootstrap files and `docker start` send to the Engine (the
# runtime's daemon exits without its bootstrap file).
#
#   scripts/real-engine-create.sh [N]     (default 10)
#   OAC_DOCKER_SOCKET      an existing Engine to use instead of a private one
#   OAC_SECCOMP_UPSTREAM   as for scripts/quickstart.sh
#
# Both sides include one process start each way (the `client` process for
# the node; `curl` per Engine call for the direct side).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
runs="${1:-10}"
upstream=${OAC_SECCOMP_UPSTREAM:-$root/../shared/seccomp-upstream}
work="$(mktemp -d)"
serve_pid=""
started_engine=false
cleanup() {
    if [ -n "$serve_pid" ]; then kill -TERM "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
    $started_engine && scripts/docker-engine.sh stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

cargo build -q --release -p sandbox-host -p contract-suite --bins
[ -f target/plugins/docker.wasm ] || cargo xtask build-plugins
host=target/release/sandbox-host
if [ -z "${OAC_DOCKER_SOCKET:-}" ] && ! scripts/docker-engine.sh status >/dev/null 2>&1; then
    started_engine=true
fi
socket=$(scripts/docker-engine.sh start | tail -n 1)
engine() { # METHOD PATH [JSON]
    curl -sf --unix-socket "$socket" -X "$1" -H 'Content-Type: application/json' \
        ${3:+--data-binary "$3"} "http://engine/v1.45$2"
}
put_tar() { # CONTAINER PATH FILE
    curl -sf --unix-socket "$socket" -X PUT -H 'Content-Type: application/x-tar' \
        --data-binary "@$3" "http://engine/v1.45/containers/$1/archive?path=$2"
}
image=$(target/release/runtime-image --engine-socket "$socket")
"$host" seccomp --upstream "$upstream/moby-default-65adc7e.json" \
    --license "$upstream/LICENSE" --out "$work/seccomp" >/dev/null
printf 'real-engine-bench-token-0123456789\n' > "$work/token"
chmod 600 "$work/token"
cat > "$work/node.toml" <<TOML
token_file = "$work/token"
installation = "real-engine-bench"
plugins = "$root/target/plugins"
[listen]
unix = "$work/node.sock"
[log]
level = "warn"
[kinds.docker]
docker_socket = "$socket"
[kinds.docker.container_policy]
image = "$image"
network = "none"
seccomp_profile = "$work/seccomp/seccomp.json"
cpus = 1
memory_mib = 256
TOML
cat > "$work/bootstrap.json" <<JSON
{"session_id": "s", "device_id": "d", "core_url": "https://core.invalid",
 "daemon_credential": "real-engine-bench-credential", "harness": "h",
 "network_access": "disabled", "allowed_domains": []}
JSON
"$host" serve --config "$work/node.toml" 2>"$work/serve.log" & serve_pid=$!
remote=(--unix "$work/node.sock" --token-file "$work/token")
until "$host" client "${remote[@]}" kinds >/dev/null 2>&1; do
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.1
done

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
node_times=() direct_times=()
for i in $(seq "$runs"); do
    # Through the node.
    start=$(now_ms)
    "$host" client "${remote[@]}" call docker create --reference "bench/env/a$i" \
        --bootstrap "$work/bootstrap.json" > "$work/created.json"
    node_times+=($(( $(now_ms) - start )))
    jq -e '.ok.state == "running"' "$work/created.json" >/dev/null ||
        { echo "create did not answer running:" >&2; cat "$work/created.json" >&2; exit 1; }
    # The node's container, as the engine holds it (not timed).
    id=$(engine GET "/containers/json?all=1&filters=$(jq -rn --arg a "a$i" \
        '{label: ["io.oac.allocation=\($a)"]} | @json | @uri')" | jq -r '.[0].Id')
    engine GET "/containers/$id/json" > "$work/inspect.json"
    engine GET "/containers/$id/archive?path=/home/runtime" > "$work/home.tar"
    engine GET "/containers/$id/archive?path=/environment" > "$work/environment-dir.tar"
    rm -rf "$work/environment" && mkdir "$work/environment"
    tar -xf "$work/environment-dir.tar" -C "$work/environment"
    tar -cf "$work/environment.tar" -C "$work/environment/environment" .
    "$host" client "${remote[@]}" call docker kill --reference "bench/env/a$i" >/dev/null

    # Directly: a volume, the same Config and HostConfig, start.
    body=$(jq --arg v "direct-$i" '.Config + {HostConfig: (.HostConfig
        | .Mounts = [.Mounts[]? | if .Type == "volume" then .Source = $v else . end])}
        | .Labels = {}' "$work/inspect.json")
    start=$(now_ms)
    engine POST /volumes/create "{\"Name\": \"direct-$i\"}" >/dev/null
    cid=$(engine POST "/containers/create?name=direct-$i" "$body" | jq -r .Id)
    put_tar "$cid" /home "$work/home.tar"
    put_tar "$cid" /environment "$work/environment.tar"
    engine POST "/containers/$cid/start" >/dev/null
    direct_times+=($(( $(now_ms) - start )))
    sleep 0.5 # the daemon would exit at once without its bootstrap file
    [ "$(engine GET "/containers/$cid/json" | jq -r .State.Running)" = true ] ||
        { echo "the direct container is not running" >&2; exit 1; }
    engine DELETE "/containers/$cid?force=1&v=1" >/dev/null
    engine DELETE "/volumes/direct-$i" >/dev/null || true
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "node create (ms):   ${node_times[*]}"
echo "direct run (ms):    ${direct_times[*]}"
n=$(median "${node_times[@]}") d=$(median "${direct_times[@]}")
echo "median: node ${n} ms, direct ${d} ms"
awk -v n="$n" -v d="$d" 'BEGIN { printf "ratio node / direct: %.2f\n", n / d }'
