#!/usr/bin/env bash
# A private Docker Engine for tests and CI (Debian 12 bookworm, run as root).
#
# Why: the docker provider's tests need an Engine with API >= 1.45, but bookworm
# ships docker.io 20.10 (API 1.41), machines have only the docker CLI, and no
# registry is reachable. So this script installs trixie's docker.io 26.1 and
# containerd (pinned: nothing else comes from trixie), runs containerd + dockerd
# on a private socket/state dir without touching /var/run/docker.sock, the
# host's iptables or bridges, and builds a busybox image through the import API.
#
# Usage: scripts/docker-engine.sh start|stop|status|import-busybox NAME[:TAG]
#   OAC_DOCKER_SOCKET  existing Engine socket to use instead (if API >= 1.45)
#   OAC_DOCKER_STATE   state dir (default /tmp/oac-docker); socket: $STATE/docker.sock
set -euo pipefail

STATE=${OAC_DOCKER_STATE:-/tmp/oac-docker}
SOCK=$STATE/docker.sock
CTRD_SOCK=$STATE/containerd/containerd.sock
MIN_API=1.45
TRIXIE_PKGS=(docker.io containerd)           # the only packages taken from trixie
UPGRADE_OK="docker.io containerd runc tini"  # the only packages apt may upgrade

die() { echo "docker-engine: $*" >&2; exit 1; }

# Print the Engine API version behind socket $1 if it answers and is >= MIN_API.
api_version() {
    [ -S "$1" ] || return 1
    curl -sf --max-time 5 --unix-socket "$1" http://d/version 2>/dev/null | python3 -c '
import json, sys
v = json.load(sys.stdin)["ApiVersion"]
ok = tuple(map(int, v.split("."))) >= tuple(map(int, sys.argv[1].split(".")))
print(v); sys.exit(0 if ok else 1)' "$MIN_API" 2>/dev/null
}

# The socket to use: OAC_DOCKER_SOCKET if it is a usable Engine, else ours.
socket() {
    if [ -n "${OAC_DOCKER_SOCKET:-}" ] && api_version "$OAC_DOCKER_SOCKET" >/dev/null; then
        echo "$OAC_DOCKER_SOCKET"
    else
        echo "$SOCK"
    fi
}

pid_of() { # pid from pidfile $1 if that process is alive and runs from $STATE
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] && grep -qF "$STATE" "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

install_engine() {
    local mirror sim bad
    mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "${mirror:-http://deb.debian.org/debian}" >/etc/apt/sources.list.d/oac-trixie.sources
    printf 'Package: *\nPin: release n=trixie\nPin-Priority: 100\n\nPackage: %s\nPin: release n=trixie\nPin-Priority: 990\n' \
        "${TRIXIE_PKGS[*]}" >/etc/apt/preferences.d/oac-trixie-docker
    apt-get update -qq
    sim=$(apt-get install -s --no-install-recommends "${TRIXIE_PKGS[@]}") ||
        die "apt cannot resolve installing ${TRIXIE_PKGS[*]} from trixie (see above)"
    bad=$(awk -v up=" $UPGRADE_OK " -v tx=" ${TRIXIE_PKGS[*]} " '
        /^Remv / { print "remove " $2 }
        /^Inst / && $3 ~ /^\[/ && index(up, " " $2 " ") == 0 { print "upgrade " $2 }
        /^Inst / && /Debian:13[.\/]/ && index(tx, " " $2 " ") == 0 { print "from trixie " $2 }' <<<"$sim")
    [ -z "$bad" ] || die "refusing to install docker.io, apt would: ${bad//$'\n'/, }"
    # No init system here, but make sure the packages never start the system daemons.
    local policy=/usr/sbin/policy-rc.d added=
    if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' >$policy; chmod +x $policy; added=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${TRIXIE_PKGS[@]}" >/dev/null
    [ -z "$added" ] || rm -f $policy
}

# The engine's version is read with curl and python3: install them if missing.
ensure_tools() {
    local need=() tool
    for tool in curl python3; do command -v "$tool" >/dev/null || need+=("$tool"); done
    [ "${#need[@]}" -eq 0 ] && return
    echo "docker-engine: installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" ca-certificates >/dev/null
}

start() {
    local sock ver major pid
    ensure_tools
    sock=$(socket)
    if [ "$sock" != "$SOCK" ] || api_version "$SOCK" >/dev/null; then echo "$sock"; return; fi
    ver=$(dockerd --version 2>/dev/null | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p' || true)
    major=${ver:-0}
    if [ "$major" -lt 26 ] || ! command -v containerd >/dev/null; then
        echo "docker-engine: installing docker.io from trixie (dockerd: ${ver:-missing})" >&2
        install_engine
    fi
    stop >/dev/null 2>&1 || true   # clear a half-dead previous run
    mkdir -p "$STATE/containerd"
    cat >"$STATE/containerd.toml" <<EOF
version = 2
root = "$STATE/containerd/root"
state = "$STATE/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CTRD_SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE/containerd/opt"
EOF
    echo '{}' >"$STATE/daemon.json"   # ignore any /etc/docker/daemon.json
    setsid containerd --config "$STATE/containerd.toml" </dev/null >"$STATE/containerd.log" 2>&1 &
    echo $! >"$STATE/containerd.pid"
    for _ in $(seq 100); do [ -S "$CTRD_SOCK" ] && break; sleep 0.2; done
    [ -S "$CTRD_SOCK" ] || die "containerd did not start, see $STATE/containerd.log"
    setsid dockerd --host "unix://$SOCK" --containerd "$CTRD_SOCK" \
        --data-root "$STATE/data" --exec-root "$STATE/exec" --pidfile "$STATE/dockerd.pid" \
        --config-file "$STATE/daemon.json" --storage-driver overlay2 \
        --iptables=false --ip6tables=false --ip-forward=false --ip-masq=false --bridge=none \
        </dev/null >"$STATE/dockerd.log" 2>&1 &
    pid=$!
    for _ in $(seq 60); do
        api_version "$SOCK" >/dev/null && { echo "$SOCK"; return; }
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    tail -n 20 "$STATE/dockerd.log" >&2
    die "dockerd did not answer on $SOCK, see $STATE/dockerd.log"
}

stop_pidfile() { # SIGTERM the process of pidfile $1, wait up to $2 s, then SIGKILL
    local pid
    pid=$(pid_of "$1") || { rm -f "$1"; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq $(($2 * 5))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$1"
}

stop() {
    stop_pidfile "$STATE/dockerd.pid" 30   # dockerd stops its containers first
    stop_pidfile "$STATE/containerd.pid" 10
    pkill -KILL -f -- "-address $CTRD_SOCK" 2>/dev/null || true  # leftover shims of ours
    # dockerd bind-mounts its data root (and leaves mounts behind if it was killed)
    awk -v s="$STATE" '$5 == s || index($5, s "/") == 1 {print $5}' /proc/self/mountinfo |
        sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
    rm -f "$SOCK" "$CTRD_SOCK"
    echo stopped
}

status() {
    local sock ver
    sock=$(socket)
    if ver=$(api_version "$sock"); then echo "running $sock api=$ver"; else echo stopped; return 1; fi
}

import_busybox() {
    local ref=${1:?usage: import-busybox NAME[:TAG]} repo tag sock out
    repo=$ref tag=latest
    if [[ ${ref##*/} == *:* ]]; then repo=${ref%:*} tag=${ref##*:}; fi
    sock=$(socket)
    api_version "$sock" >/dev/null || die "no Engine on $sock (run start first)"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    ( cd "$tmp" && { apt-get download -qq busybox-static 2>/dev/null ||
        { apt-get update -qq && apt-get download -qq busybox-static; }; } )
    dpkg-deb -x "$tmp"/busybox-static_*.deb "$tmp/deb"
    local r=$tmp/rootfs
    mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,etc,root,home/runtime,tmp,proc,sys,dev}
    cp "$tmp/deb/bin/busybox" "$r/bin/busybox"
    for app in $("$r/bin/busybox" --list-full); do
        [ -e "$r/$app" ] || ln -s /bin/busybox "$r/$app"
    done
    ln -sf busybox "$r/bin/sh"
    printf 'root:x:0:0:root:/root:/bin/sh\nruntime:x:1000:1000:runtime:/home/runtime:/bin/sh\n' >"$r/etc/passwd"
    printf 'root:x:0:\nruntime:x:1000:\n' >"$r/etc/group"
    chown 1000:1000 "$r/home/runtime"; chmod 1777 "$r/tmp"; chmod 700 "$r/root"
    tar -C "$r" --numeric-owner -cf "$tmp/rootfs.tar" .
    out=$(curl -sf --unix-socket "$sock" -X POST -H 'Content-Type: application/x-tar' \
        --data-binary @"$tmp/rootfs.tar" \
        "http://d/images/create?fromSrc=-&repo=$repo&tag=$tag&changes=CMD%20%5B%22%2Fbin%2Fsh%22%5D") ||
        die "import API call failed"
    ! grep -q '"error' <<<"$out" || die "import failed: $out"
    echo "$repo:$tag"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    import-busybox) shift; import_busybox "$@" ;;
    *) sed -n '11,13p' "$0" >&2; exit 2 ;;
esac
