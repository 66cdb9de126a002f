#!/usr/bin/env bash
# ComfyUI's official workflow templates: the wheel pinned in
# scripts/templates.txt (version and sha256), its templates/*.json unpacked
# into .cache/comfyui-templates/ (gitignored), which
# tests/comfyui_templates.rs imports one by one.
#
#   scripts/templates.sh fetch
#
# Idempotent: a folder unpacked from the pinned wheel (its sha256 recorded
# beside it) is kept; a new one is unpacked beside it and moved into place.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PIN="$ROOT/scripts/templates.txt"
WHEELS="$ROOT/.cache/comfyui-templates-wheel"
DEST="$ROOT/.cache/comfyui-templates"

fail() { echo "templates: $*" >&2; exit 2; }

[ "${1:-}" = fetch ] || fail "usage: scripts/templates.sh fetch"
sha=$(sed -n 's/.*--hash=sha256:\([0-9a-f]\{64\}\).*/\1/p' "$PIN")
[ -n "$sha" ] || fail "no sha256 in $PIN"
if [ -f "$DEST/.wheel-sha256" ] && [ "$(cat "$DEST/.wheel-sha256")" = "$sha" ]; then
  exit 0
fi
mkdir -p "$WHEELS"
"$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps --require-hashes \
  -r "$PIN" -d "$WHEELS" \
  || fail "downloading or verifying the wheel of $PIN failed (pip's message above names the file and its expected sha256)"
wheel=$(ls "$WHEELS"/comfyui_workflow_templates_json-*.whl)
[ "$(sha256sum "$wheel" | cut -d' ' -f1)" = "$sha" ] || fail "$wheel does not have sha256 $sha"
rm -rf "$DEST.partial"
mkdir -p "$DEST.partial"
"$VENV/bin/python" - "$wheel" "$DEST.partial" <<'PY'
import os, sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
prefix = "comfyui_workflow_templates_json/templates/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and name.endswith(".json") and "/" not in name[len(prefix):]:
            with z.open(name) as f, open(os.path.join(out, name[len(prefix):]), "wb") as g:
                g.write(f.read())
PY
echo "$sha" > "$DEST.partial/.wheel-sha256"
rm -rf "$DEST"
mv "$DEST.partial" "$DEST"
echo "templates: $(ls "$DEST" | wc -l) files in $DEST"
