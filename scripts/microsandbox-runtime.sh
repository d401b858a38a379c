#!/usr/bin/env bash
# Installs the microsandbox runtime the host's helper is built against:
# `msb` and `libkrunfw` of release 0.7.11, taken from PyPI's `microsandbox`
# wheel (which bundles both) and checked against pinned digests. Never run
# at build time; an operator (or CI) runs it once.
#
# Usage: scripts/microsandbox-runtime.sh [DIR]     (default /opt/oac/microsandbox)
#   installs DIR/bin/msb and DIR/lib/libkrunfw.so.5.6.1, makes the runtime's
#   home DIR/home (mode 0700), and prints the three paths a node's
#   configuration names, as MSB_PATH=…, MSB_LIBKRUNFW_PATH=…, MSB_HOME=….
set -euo pipefail

VERSION=0.7.11
WHEEL=microsandbox-$VERSION-cp310-abi3-manylinux_2_28_x86_64.whl
WHEEL_SHA256=65f1e4bbf8d721c9f7f557329fb6c8cf41f554c1c6942eac8b941198fa283fe0
MSB_SHA256=02230b0d0ccab4da487c96282ef06bc366a603f0b95201e999cf9e13df31767e
FIRMWARE=libkrunfw.so.5.6.1
FIRMWARE_SHA256=3854efcd3fe625528fa00207d97586d9790db8c436bb6881a43986604336d18e

die() { echo "microsandbox-runtime: $*" >&2; exit 1; }

dir=$(realpath -m "${1:-/opt/oac/microsandbox}")
[ "$(uname -m)" = x86_64 ] || die "the pinned wheel is for x86_64 Linux"
command -v python3 >/dev/null || die "python3 is needed (to download and unpack the wheel)"

verify() { # FILE SHA256
    echo "$2  $1" | sha256sum --check --status || die "$(basename "$1"): unexpected SHA-256"
}

if [ -x "$dir/bin/msb" ] && [ -f "$dir/lib/$FIRMWARE" ]; then
    verify "$dir/bin/msb" "$MSB_SHA256"
    verify "$dir/lib/$FIRMWARE" "$FIRMWARE_SHA256"
else
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --platform manylinux_2_28_x86_64 --python-version 3.10 \
        "microsandbox==$VERSION" -d "$work" >/dev/null ||
        die "could not download microsandbox==$VERSION from PyPI"
    verify "$work/$WHEEL" "$WHEEL_SHA256"
    python3 - "$work/$WHEEL" "$work" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for member in ("microsandbox/_bundled/bin/msb", "microsandbox/_bundled/lib/libkrunfw.so.5.6.1"):
        wheel.extract(member, sys.argv[2])
EOF
    mkdir -p "$dir/bin" "$dir/lib"
    install -m 0755 "$work/microsandbox/_bundled/bin/msb" "$dir/bin/msb"
    install -m 0644 "$work/microsandbox/_bundled/lib/$FIRMWARE" "$dir/lib/$FIRMWARE"
    verify "$dir/bin/msb" "$MSB_SHA256"
    verify "$dir/lib/$FIRMWARE" "$FIRMWARE_SHA256"
fi
[ "$("$dir/bin/msb" --version)" = "msb $VERSION" ] || die "msb does not report $VERSION"
mkdir -p "$dir/home"
chmod 0700 "$dir/home"
echo "MSB_PATH=$dir/bin/msb"
echo "MSB_LIBKRUNFW_PATH=$dir/lib/$FIRMWARE"
echo "MSB_HOME=$dir/home"
