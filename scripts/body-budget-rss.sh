#!/usr/bin/env bash
# Measures the node's peak RSS under 64 concurrent run-command requests of
# 50 MiB stdin each (RELIABILITY.md): serves the steerable component with
# the default request-body budget, sends the 64 requests at once over the
# Unix socket, and prints the serve process's VmHWM before and after, and
# how the requests were answered. Needs a Docker Engine socket (argument or
# OAC_DOCKER_SOCKET; only its version is asked) and target/plugins.
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${1:-${OAC_DOCKER_SOCKET:?give the Docker Engine socket}}
dir=$(mktemp -d)
trap 'kill -TERM "${pid:-0}" 2>/dev/null || true; rm -rf "$dir"' EXIT
head -c 32 /dev/urandom | base64 | tr -d '/+=' >"$dir/token"
chmod 600 "$dir/token"
echo '{"defaultAction":"SCMP_ACT_ERRNO"}' >"$dir/seccomp.json"
cat >"$dir/node.toml" <<TOML
token_file = "$dir/token"
installation = "inst-rss"
plugins = "$PWD/target/plugins"
registry = "$PWD/target/plugins/test-registry.toml"
[listen]
unix = "$dir/node.sock"
[kinds.steerable]
docker_socket = "$engine"
[kinds.steerable.container_policy]
image = "sha256:0000000000000000000000000000000000000000000000000000000000000001"
network = "none"
seccomp_profile = "$dir/seccomp.json"
cpus = 1.0
memory_mib = 256
[kinds.steerable.configuration]
action = "none"
TOML
target/debug/sandbox-host serve --config "$dir/node.toml" 2>"$dir/serve.log" &
pid=$!
for _ in $(seq 100); do [ -S "$dir/node.sock" ] && break; sleep 0.1; done
python3 - "$pid" "$dir" <<'PY'
import base64, collections, json, re, socket, sys, threading, time
pid, dir = int(sys.argv[1]), sys.argv[2]
token = open(f"{dir}/token").read().strip()
stdin = base64.b64encode(b"x" * (50 << 20)).decode()
body = json.dumps({"kind": "steerable", "timeout_ms": 120000, "call": {"run_command": {
    "reference": {"tenant_id": "t", "environment_id": "e", "allocation_id": "a"},
    "request": {"args": ["cat"], "stdin": stdin}}}}).encode()
head = (f"POST /call HTTP/1.1\r\nhost: node\r\noac-protocol: oac-node/4\r\n"
        f"authorization: Bearer {token}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode()
def peak():
    return int(re.search(r"VmHWM:\s+(\d+)", open(f"/proc/{pid}/status").read()).group(1)) >> 10
answers = []
def send():
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(f"{dir}/node.sock")
        try:
            s.sendall(head + body)
        except OSError:
            pass  # refused before the body was read
        data = b"".join(iter(lambda: s.recv(65536), b""))
    answers.append(data.split(b"\r\n", 1)[0].decode() + " " + data.rsplit(b"\r\n\r\n", 1)[-1][:60].decode())
before, started = peak(), time.time()
threads = [threading.Thread(target=send) for _ in range(64)]
for t in threads: t.start()
for t in threads: t.join()
print(f"64 requests of {len(body) / 2**20:.1f} MiB: peak RSS {before} MiB before, {peak()} MiB after, {time.time() - started:.1f} s")
for answer, count in collections.Counter(answers).items():
    print(f"  {count} x {answer}")
PY
