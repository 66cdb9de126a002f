#!/usr/bin/env bash
# One-time set-up of a fresh Debian machine for building and testing Workflow
# Studio. Idempotent: installs only what is missing. Sourced by the other
# scripts; safe to run by hand.
set -euo pipefail

# Debian packages the build and the tests need (none are needed by the
# current crates beyond the Rust toolchain and a C compiler; the GUI and the
# runner add theirs here).
APT_PACKAGES=(pkg-config)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

command -v cargo >/dev/null || {
  echo "setup: cargo not found; install the Rust toolchain (rustup) first" >&2
  exit 2
}
