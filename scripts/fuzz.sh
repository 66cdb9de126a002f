#!/usr/bin/env bash
# Run one cargo-fuzz target for a chosen time with a seed corpus built from
# our fixtures (and the shared corpus when it is beside the checkout).
#   scripts/fuzz.sh TARGET [SECONDS]     TARGET: document|comfyui|textproto|recipe|signature
# Needs cargo-fuzz (`cargo install cargo-fuzz`); libFuzzer needs nightly
# features, enabled on the stable toolchain with RUSTC_BOOTSTRAP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?target: document|comfyui|textproto|recipe|signature}
seconds=${2:-60}
shared=${WFSTUDIO_SHARED:-../shared}
seeds=fuzz/corpus/$target
mkdir -p "$seeds"

seed() { # copy files matching a find expression into the seed folder
    local root=$1; shift
    [ -d "$root" ] || return 0
    find "$root" -type f "$@" -size -256k -print0 |
        while IFS= read -r -d '' f; do cp "$f" "$seeds/$(echo "$f" | tr '/' '_')"; done
}
case $target in
    document)  seed fixtures \( -name '*.yaml' -o -name '*.json' \) -not -path '*/expected/*'
               seed "$shared/corpus/catalogue" -name '*.yaml'
               seed "$shared/corpus/packages" -name 'inference_metadata.*' ;;
    comfyui)   seed fixtures/comfyui -type f
               seed "$shared/corpus/comfyui" \( -name '*.json' -o -name '*.png' \) -not -name node_defs.json ;;
    textproto) seed fixtures -name '*.onnx.textproto'
               seed "$shared/corpus/packages" -name '*.onnx.textproto' ;;
    recipe)    seed fixtures -path '*recipes*' -name '*.json'
               seed "$shared/corpus/expected" -name '*.json' ;;
    signature) seed fixtures -name '*.onnx' ;;
    *) echo "unknown target $target" >&2; exit 2 ;;
esac
echo "seeds: $(find "$seeds" -type f | wc -l) files in $seeds"
RUSTC_BOOTSTRAP=1 cargo fuzz run -O "$target" "$seeds" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1
