#!/usr/bin/env bash
# Install what railpath needs on a fresh Debian machine (root or sudo). Idempotent.
# Rust comes from rustup when present; otherwise Debian's cargo is installed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# Debian packages: build tools; for the namespace testbed and gateway: iproute2, nftables,
# iperf3 and mptcpd (mptcpize); python3-venv for the Python package's tests; chromium to render
# the reproduction reports in the screenshot test; tshark to check that Wireshark dissects the
# packet captures (`railpath run --pcap`) as MPTCP.
DEB_PACKAGES=(build-essential pkg-config iproute2 nftables iperf3 mptcpd ethtool procps python3 python3-venv chromium tshark)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  # wireshark-common asks whether non-root users may capture; answer no, without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: no Rust toolchain found; installing Debian's cargo"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq cargo rustc >/dev/null
  fi
fi
if command -v rustup >/dev/null 2>&1; then
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt clippy >/dev/null 2>&1 || true
  # llvm-profdata for the profile-guided release build (scripts/build-release.sh); without it
  # that build is a plain one.
  rustup component list --installed 2>/dev/null | grep -q '^llvm-tools' || rustup component add llvm-tools >/dev/null 2>&1 || echo "setup: rustup could not add llvm-tools: the release build will not be profile-guided"
fi
echo "setup: ok ($(cargo --version))"
cd "$here"
