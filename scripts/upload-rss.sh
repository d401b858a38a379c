#!/usr/bin/env bash
# Measures the host's peak resident memory for one archive upload of
# ARCHIVE_MIB (default 47) MiB, against a plain call: `sandbox-host call`
# of the steerable component on a Docker Engine (argument or
# OAC_DOCKER_SOCKET), once doing nothing and once making a volume and a
# container and uploading a one-file archive it builds itself, each under
# /usr/bin/time; prints both peaks and their difference. Needs
# target/plugins and a built sandbox-host (target/debug, or BIN).
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${1:-${OAC_DOCKER_SOCKET:?give the Docker Engine socket}}
bin=${BIN:-target/debug/sandbox-host}
mib=${ARCHIVE_MIB:-47}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
image=$(target/debug/runtime-image --engine-socket "$engine" | tail -n 1)
echo '{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[]}' >"$dir/seccomp.json"
cat >"$dir/policy.toml" <<TOML
image = "$image"
network = "none"
seccomp_profile = "$dir/seccomp.json"
cpus = 1.0
memory_mib = 256
TOML
peak() { # steering JSON, allocation -> peak RSS in KiB
    /usr/bin/time -f '%M' -o "$dir/rss" "$bin" call steerable get-info \
        --reference "t/e/$2" --docker-socket "$engine" \
        --container-policy "$dir/policy.toml" --budget-ms 60000 \
        --registry target/plugins/test-registry.toml \
        --configuration "steerable=$1" >"$dir/out" 2>"$dir/err" || true
    tail -n 1 "$dir/rss"
}
run=$(date +%s%N)
plain=$(peak '{"action":"none"}' "plain-$run")
upload=$(peak "{\"action\":\"make-then-upload\",\"container\":\"oac-rss-$run\",\"volume\":\"oac-rss-$run\",\"cmd\":[\"sleep\",\"1\"],\"mounts\":[{\"volume\":\"oac-rss-$run\",\"target\":\"/data\"}],\"path\":\"/data\",\"count\":$((mib << 20))}" "upload-$run")
echo "answer: $(cat "$dir/out")"
echo "plain call: $((plain / 1024)) MiB; ${mib} MiB upload: $((upload / 1024)) MiB; added: $(((upload - plain) / 1024)) MiB"
docker -H "unix://$engine" rm -f "oac-rss-$run" >/dev/null 2>&1 || true
docker -H "unix://$engine" volume rm "oac-rss-$run" >/dev/null 2>&1 || true
