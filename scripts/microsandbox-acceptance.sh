#!/usr/bin/env bash
# The microsandbox kind's native acceptance: one node serving the built-in
# `microsandbox` kind, and one allocation walked through it as Core drives
# it (`sandbox-host client checkpoint-walk`): create, a file written in the
# workspace and the daemon's process id read, suspend to a full snapshot,
# resume into generation 1, the file and the process id read back (disk and
# memory came back), kill-compute of both generations, delete-snapshot.
# Every answer is checked by the contract's rules; then the helper itself
# is asked whether both VMs and the snapshot are gone.
#
# It is gated on the node's readiness probe: on a machine that cannot boot
# VMs it stops at the probe, prints the host's fixed reason and what it
# would have checked, checks that a create is refused with nothing created
# while kill is still served, and exits 0 when the reason is the machine's
# (no CPU virtualisation, or the runtime's own diagnosis failing), 1
# otherwise.
#
# Usage:
#   scripts/microsandbox-acceptance.sh --fake
#       the fake helper (`oac-fake microsandbox-helper`) over a fake runtime:
#       the whole walk, on any machine (CI runs this).
#   scripts/microsandbox-acceptance.sh --runtime DIR --helper PATH --image IMAGE
#       the real runtime (scripts/microsandbox-runtime.sh DIR), the real
#       helper, and the runtime image pinned by digest (its init is
#       plugins/microsandbox/image/oac-microsandbox-init).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

die() { echo "microsandbox-acceptance: $*" >&2; exit 1; }
say() { printf '\n== %s\n' "$*"; }
usage() { sed -n '18,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

fake=false runtime="" helper="" image=""
while [ $# -gt 0 ]; do
    case "$1" in
        --fake) fake=true ;;
        --runtime) runtime=$(realpath -m "${2:?}"); shift ;;
        --helper) helper=$(realpath -m "${2:?}"); shift ;;
        --image) image=${2:?}; shift ;;
        *) usage ;;
    esac
    shift
done
if ! $fake && { [ -z "$runtime" ] || [ -z "$helper" ] || [ -z "$image" ]; }; then usage; fi

dir=${OAC_ACCEPTANCE_DIR:-$root/target/microsandbox-acceptance}
rm -rf "$dir"
mkdir -p "$dir"
serve_pid=""
finish() {
    if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
        kill -INT "$serve_pid" 2>/dev/null || true
        wait "$serve_pid" 2>/dev/null || true
    fi
}
trap finish EXIT

say "components and binaries"
[ -f target/plugins/microsandbox.wasm ] || cargo xtask build-plugins
cargo build -q -p sandbox-host -p contract-suite --bins
host=$root/target/debug/sandbox-host

if $fake; then
    # The fake helper behind a script, as an operator's helper path is; its
    # runtime lives in the home it is given.
    helper=$dir/fake-helper
    printf '#!/bin/sh\nexec %s microsandbox-helper\n' "$root/target/debug/oac-fake" >"$helper"
    chmod 755 "$helper"
    home=$dir/fake-home msb=/fake/microsandbox/bin/msb libkrunfw=/fake/microsandbox/lib/libkrunfw.so.5.6.1
    mkdir -p "$home"
    image="oac-runtime@sha256:$(printf '3%.0s' $(seq 64))"
else
    [ -x "$helper" ] || die "no helper at $helper (see docs/operating.md)"
    home=$runtime/home msb=$runtime/bin/msb libkrunfw=$runtime/lib/libkrunfw.so.5.6.1
    [ -x "$msb" ] || die "no runtime in $runtime (scripts/microsandbox-runtime.sh $runtime)"
fi
chmod 700 "$home"

say "node configuration"
token=$dir/token
(umask 077 && od -An -N24 -tx1 /dev/urandom | tr -d ' \n' >"$token")
cat >"$dir/node.toml" <<EOF
token_file = "$token"
installation = "acceptance"
plugins = "$root/target/plugins"

[listen]
unix = "$dir/node.sock"

[log]
level = "info"

[microsandbox]
helper = "$helper"
home = "$home"
msb = "$msb"
libkrunfw = "$libkrunfw"

[kinds.microsandbox]

[kinds.microsandbox.vm_policy]
image = "$image"
cpus = 1
memory_mib = 512
root_disk_mib = 2048
environment_disk_mib = 512
network = "none"
EOF
echo "$dir/node.toml"

say "serve"
"$host" serve --config "$dir/node.toml" 2>"$dir/serve.log" &
serve_pid=$!
remote=(--unix "$dir/node.sock" --token-file "$token")
for _ in $(seq 100); do
    [ -S "$dir/node.sock" ] && "$host" client "${remote[@]}" kinds >/dev/null 2>&1 && break
    kill -0 "$serve_pid" 2>/dev/null || { cat "$dir/serve.log" >&2; die "serve exited"; }
    sleep 0.2
done

say "readiness (the host's probe through the helper)"
if "$host" client "${remote[@]}" health; then
    echo "ready: the node can run VMs"
else
    reason=$(grep -o 'microsandbox_not_ready.*' "$dir/serve.log" | grep -o 'reason[^a-z_]*[a-z_]*' | head -n 1 | grep -o '[a-z_]*$' || true)
    echo "not ready: ${reason:-unknown}"
    $fake && die "the fake runtime boots VMs: the probe must pass"
    cat <<'EOF'
The walk stops at the probe. On a machine that boots VMs it would check:
  create                 settled, bootstrapped (the image's init ran as root, once)
  run-command            a file written to /workspace; the daemon's process id
  suspend                a full snapshot of exactly this operation and source,
                         the source force-killed and confirmed stopped
  resume                 generation 1 restored from exactly that snapshot
  run-command-compute    the file and the same daemon process in generation 1
  observe                generation 1, found by its native id alone
  kill-compute           both generations, each then not found
  delete-snapshot        the snapshot, then not found by the helper
EOF
    # A create is refused before anything is sent; cleanup is still served.
    refused=$("$host" client "${remote[@]}" walk microsandbox || true)
    echo "$refused"
    grep -q '^create: error invalid$' <<<"$refused" || die "create was not refused"
    grep -q '^kill: ok ' <<<"$refused" || die "kill was not served"
    case "$reason" in
        no_cpu_virtualisation | runtime_doctor_failed) exit 0 ;;
        *) die "not ready for a reason of the node's configuration: ${reason:-unknown}" ;;
    esac
fi

say "one allocation through the node, as Core drives it"
stamp=$(date +%s%N)
"$host" client "${remote[@]}" checkpoint-walk microsandbox \
    --reference "acceptance/env/alloc-$stamp" | tee "$dir/walk.txt"
[ "${PIPESTATUS[0]}" = 0 ] || die "the walk failed"

say "native state (asked of the helper directly)"
python3 - "$dir/walk.txt" "$helper" "$home" "$msb" "$libkrunfw" "$fake" <<'EOF'
import json, os, subprocess, sys, time
walk, helper, home, msb, libkrunfw, fake = sys.argv[1:]
answers = {}
for line in open(walk):
    step, _, rest = line.partition(": ok ")
    if rest:
        answers[step] = json.loads(rest)
first = answers["initial"]["name"]
second = answers["new-compute (generation 1)"]["name"]
snapshot = answers["suspend"]["snapshot"]
member = "s-" + snapshot["operation_id"]
runtime = {"home": home, "msb": msb, "libkrunfw": libkrunfw}
env = {"PATH": os.environ["PATH"], "MSB_HOME": home, "MSB_PATH": msb,
       "MSB_LIBKRUNFW_PATH": libkrunfw, "MSB_BACKEND": "local", "RUST_LOG": "off"}

def ask(operation):
    request = {"version": 1, "runtime": runtime,
               "deadline_unix_ms": int(time.time() * 1000) + 60000, "operation": operation}
    out = subprocess.run([helper], input=json.dumps(request).encode(), env=env,
                         capture_output=True, check=True).stdout
    return json.loads(out)["outcome"]

for what, operation in [
    (first, {"op": "get", "name": first}),
    (second, {"op": "get", "name": second}),
    (first + ":" + member, {"op": "get-snapshot", "group": first, "member": member}),
]:
    outcome = ask(operation)
    if outcome != {"kind": "error", "code": "not-found"}:
        sys.exit(f"{what} is still there: {outcome}")
    print(f"{what}: not found")
if fake == "true":
    # The fake runtime's journal: after the capture, the source was killed
    # and never resumed or run.
    journal = json.load(open(os.path.join(home, "fake-runtime.json")))["journal"]
    capture = journal.index(f"capture {first}")
    changes = [line for line in journal[capture + 1:]
               if line.endswith(" " + first) and not line.startswith("get ")]
    if not changes or changes[0] != f"kill-remove {first}":
        sys.exit(f"the source after its capture: {changes}")
    print(f"after the capture: {changes[0]} (journal of {len(journal)} operations)")
EOF
say "accepted"
