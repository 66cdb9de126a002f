#!/usr/bin/env bash
# Run one cargo-fuzz target for a chosen time with a seed corpus built from
# our fixtures (and the shared corpus when it is beside the checkout).
#   scripts/fuzz.sh TARGET [SECONDS] [JOBS]
#   TARGET: parse|validate|lowering|comfyui|textproto|recipe|signature
# JOBS processes fuzz at once (default 2, one per core of the reference
# machine) and share the corpus. Needs cargo-fuzz (`cargo install
# cargo-fuzz`); libFuzzer needs nightly features, enabled on the stable
# toolchain with RUSTC_BOOTSTRAP=1. No sanitizer: the fuzzed crates
# (schema, core, onnx) hold no unsafe code, and without AddressSanitizer
# each input runs several times faster.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?target: parse|validate|lowering|comfyui|textproto|recipe|signature}
seconds=${2:-60}
jobs=${3:-2}
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
    parse|validate)
               seed fixtures \( -name '*.yaml' -o -name '*.json' \) -not -path '*/expected/*'
               seed "$shared/corpus/catalogue" -name '*.yaml'
               seed "$shared/corpus/packages" -name 'inference_metadata.*' ;;
    comfyui)   seed fixtures/comfyui -type f
               seed "$shared/corpus/comfyui" \( -name '*.json' -o -name '*.png' \) -not -name node_defs.json ;;
    textproto) seed fixtures -name '*.onnx.textproto'
               seed "$shared/corpus/packages" -name '*.onnx.textproto' ;;
    recipe)    seed fixtures -path '*recipes*' -name '*.json'
               seed "$shared/corpus/expected" -name '*.json' ;;
    signature) seed fixtures -name '*.onnx' ;;
    lowering)  # one seed per pattern fixture, unedited (the first byte picks it)
               for i in $(seq 0 22); do printf "\\x$(printf %02x "$i")\\x00" > "$seeds/pattern-$i"; done ;;
    *) echo "unknown target $target" >&2; exit 2 ;;
esac
echo "seeds: $(find "$seeds" -type f | wc -l) files in $seeds"
# The lowering target builds its own inputs from the pattern fixtures, so
# comparison tracing (which finds magic bytes for parsers) buys little
# there and costs half its speed.
flags=(-O --sanitizer none)
[ "$target" = lowering ] && flags+=(--no-trace-compares)
RUSTC_BOOTSTRAP=1 cargo fuzz run "${flags[@]}" "$target" "$seeds" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -fork="$jobs"
