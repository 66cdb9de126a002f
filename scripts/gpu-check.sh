#!/usr/bin/env bash
# The prepared GPU check: what a bare NVIDIA machine with no network and no
# Rust toolchain needs to run the studio's packages on its GPU, gathered in
# one folder that, with the project's tracked files, stays under 64 MiB.
#
#   scripts/gpu-check.sh prepare DIR   gather (here, after scripts/setup.sh)
#   scripts/gpu-check.sh run DIR [--ep-library NAME=PATH]
#                                      run there: every package on the CUDA
#                                      plugin EP (or the library named) and on
#                                      CPU; compare outputs (relative 1e-3);
#                                      print one table
#
# `prepare` (after scripts/setup.sh, which keeps the plugin's wheel) takes:
# the release binary, stripped and xz-compressed; the
# libraries `ldd` shows it needs beyond the base system; the nxrt-ep-cuda
# wheel (the CUDA plugin; the machine's NVIDIA CUDA 13 runtime wheels serve
# it); the terrain model's wheel; the corpus txt2img package and its recipe.
# The tiny example packages come with the tracked files. `run` uses the
# machine's own ONNX Runtime (ORT_DYLIB_PATH, else Python's onnxruntime).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUDGET=$((64 << 20))
# Libraries every Linux machine has (the C runtime); anything else ldd
# lists travels with the binary.
BASE_LIBS='^(linux-vdso|libc|libm|libgcc_s|libpthread|libdl|librt|ld-linux-x86-64|libstdc\+\+)\.so'
# The tiny packages and their recipes: PACKAGE RECIPE (paths from the root).
PACKAGES=(
  "fixtures/examples/tiny-denoise fixtures/examples/tiny-denoise/recipes/smiley.json"
  "fixtures/examples/tiny-tone fixtures/examples/tiny-tone/recipes/scale.json"
  "fixtures/examples/tiny-words fixtures/examples/tiny-words/recipes/hello.json"
)

fail() { echo "gpu-check: $*" >&2; exit 2; }

prepare() {
  local dir=$1 shared=${WFSTUDIO_SHARED:-$ROOT/../shared}
  if [ -e "$dir" ]; then
    [ -f "$dir/MANIFEST.txt" ] || fail "$dir exists and is not a prepared GPU check"
    rm -rf "$dir"
  fi
  mkdir -p "$dir/lib" "$dir/wheels" "$dir/packages"
  : >"$dir/MANIFEST.txt"
  note() { echo "$*" >>"$dir/MANIFEST.txt"; }
  (cd "$ROOT" && cargo build --release --locked -p wfstudio)
  strip -o "$dir/wfstudio" "$ROOT/target/release/wfstudio"
  xz -9 -f -T2 "$dir/wfstudio"
  note "wfstudio.xz: the release binary, stripped and xz-compressed"
  while read -r name path; do
    if [[ $name =~ $BASE_LIBS ]] || [ -z "$path" ] || [ ! -f "$path" ]; then
      note "left out $name: part of every Linux system"
    else
      cp -L "$path" "$dir/lib/$name"
      note "lib/$name: needed by the binary, not part of the base system"
    fi
  done < <(ldd "$ROOT/target/release/wfstudio" | awk '{print $1, ($3 ~ /^\//) ? $3 : ""}')
  local plugin
  plugin=$(ls "$ROOT"/.cache/gpu-check/nxrt_ep_cuda-*.whl 2>/dev/null | head -n 1)
  [ -n "$plugin" ] || fail "the nxrt-ep-cuda wheel is missing; run scripts/setup.sh first"
  cp "$plugin" "$dir/wheels/"
  note "wheels/$(basename "$plugin"): the CUDA plugin execution provider"
  local terrain
  terrain=$(ls "$ROOT"/.cache/real-models/wheels/adaptive_terrain_diffusion-*.whl 2>/dev/null | head -n 1)
  [ -n "$terrain" ] || fail "the terrain wheel is missing; run scripts/setup.sh first"
  cp "$terrain" "$dir/wheels/"
  note "wheels/$(basename "$terrain"): the terrain diffusion model (fixtures/real/terrain-diffusion)"
  if [ -d "$shared/corpus/packages/comfyui_txt2img_sd15" ]; then
    cp -r --no-preserve=mode "$shared/corpus/packages/comfyui_txt2img_sd15" "$dir/packages/"
    cp --no-preserve=mode "$shared/corpus/expected/comfyui_txt2img_sd15/seed5_guidance7p5_steps2.json" \
      "$dir/packages/comfyui_txt2img_sd15.recipe.json"
    note "packages/comfyui_txt2img_sd15: the corpus txt2img package and a recipe"
  else
    note "left out the corpus txt2img package: no shared corpus at $shared"
  fi
  note "left out onnxruntime-gpu (255 MB wheel): the machine's own onnxruntime library is used"
  note "left out the NVIDIA CUDA runtime wheels: the machine has them"
  local ours tracked
  ours=$(du -sb "$dir" | cut -f1)
  tracked=$(cd "$ROOT" && git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f1)
  note "size: $ours bytes here + $tracked bytes of tracked files = $((ours + tracked)) of $BUDGET"
  cat "$dir/MANIFEST.txt"
  ((ours + tracked <= BUDGET)) || fail "over the budget: $((ours + tracked)) > $BUDGET bytes"
}

# The ONNX Runtime library of the machine.
runtime_library() {
  if [ -n "${ORT_DYLIB_PATH:-}" ]; then
    echo "$ORT_DYLIB_PATH"
    return
  fi
  python3 -c 'import glob, os, onnxruntime
print(sorted(glob.glob(os.path.join(os.path.dirname(onnxruntime.__file__), "capi", "libonnxruntime.so*")))[0])'
}

# The NVIDIA runtime libraries of the machine's Python wheels.
nvidia_libs() {
  python3 -c 'import glob, os, site
dirs = [d for p in site.getsitepackages() for d in glob.glob(os.path.join(p, "nvidia", "*", "lib"))]
print(":".join(dirs))' 2>/dev/null || true
}

run() {
  local dir=$1
  shift
  local library=""
  if [ "${1:-}" = --ep-library ]; then library=$2; fi
  # Work happens outside DIR, which stays as prepared (and within budget).
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/wfstudio-gpu-check.XXXXXX")
  trap "rm -rf '$work'" EXIT
  mkdir -p "$work"
  xz -dkc "$dir/wfstudio.xz" >"$work/wfstudio"
  chmod +x "$work/wfstudio"
  export LD_LIBRARY_PATH="$dir/lib:$(nvidia_libs)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  ORT_DYLIB_PATH="$(runtime_library)"
  export ORT_DYLIB_PATH
  if [ -z "$library" ]; then
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
      "$(ls "$dir"/wheels/nxrt_ep_cuda-*.whl)" "$work/plugin"
    library="nxrt_ep_cuda=$(ls "$work"/plugin/nxrt_ep_cuda/*.so | head -n 1)"
  fi
  local bin="$work/wfstudio"
  local device
  device=$("$bin" devices --format json --ep-library "$library" | python3 -c 'import json, sys
listed = json.load(sys.stdin)
added = [d for l in listed["libraries"] if l["name"] == sys.argv[1] for d in (l["devices"] or [])]
errors = [l["error"] for l in listed["libraries"] if l["name"] == sys.argv[1] and l["error"]]
print(added[0] if added else "", end="")
if not added: print("; ".join(errors) or "the plugin offers no device", file=sys.stderr)' "${library%%=*}")
  [ -n "$device" ] || fail "no device from $library"
  # The terrain package, made here from its wheel.
  local terrain="$work/terrain-diffusion"
  rm -rf "$terrain" && cp -r "$ROOT/fixtures/real/terrain-diffusion" "$terrain"
  mkdir -p "$terrain/model"
  python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
open(sys.argv[2], "wb").write(z.read("terrain_diffusion/weights/terrain_consistency_unet_difficulty100.onnx"))' \
    "$(ls "$dir"/wheels/adaptive_terrain_diffusion-*.whl)" "$terrain/model/terrain_consistency_unet_difficulty100.onnx"
  "$bin" make terrain-policies --out "$terrain/policies" >/dev/null
  local list=("${PACKAGES[@]}")
  list+=("$terrain $terrain/recipes/default.json")
  [ -d "$dir/packages/comfyui_txt2img_sd15" ] &&
    list+=("$dir/packages/comfyui_txt2img_sd15 $dir/packages/comfyui_txt2img_sd15.recipe.json")
  printf '%-24s %-14s %9s %11s %11s %11s  %s\n' package device fallbacks "wall ms" "ORT ms" "copies d/h" outputs
  local package recipe status=0
  for entry in "${list[@]}"; do
    read -r package recipe <<<"$entry"
    [[ $package = /* ]] || package="$ROOT/$package"
    [[ $recipe = /* ]] || recipe="$ROOT/$recipe"
    "$bin" run "$package" --recipe "$recipe" --device cpu --format json >"$work/cpu.json" 2>"$work/cpu.err" || true
    "$bin" run "$package" --recipe "$recipe" --device "$device" --ep-library "$library" --format json \
      >"$work/gpu.json" 2>"$work/gpu.err" || true
    python3 - "$work/cpu.json" "$work/gpu.json" "$(basename "$package")" "$device" <<'EOF' || status=1
import json, math, sys
def load(path):
    try:
        return json.load(open(path))
    except ValueError:
        return None
cpu, gpu, name, device = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3], sys.argv[4]
def row(label, run, verdict):
    if run is None:
        print(f"{name:<24} {label:<14} {'-':>9} {'-':>11} {'-':>11} {'-':>11}  {verdict}")
        return
    fallbacks = sum(p["fallbacks"] for p in run["placement"].values())
    t = run["timing"]
    # Host-device copies: to the device / to the host (tensors).
    tr = run["transfers"]
    copies = f"{tr['to_device']['count']}/{tr['to_host']['count']}"
    print(f"{name:<24} {label:<14} {fallbacks:>9} {t['wall_ms']:>11.2f} {t['ort_ms']:>11.2f} {copies:>11}  {verdict}")
if cpu is None or gpu is None:
    row("cpu", cpu, "ran" if cpu else "FAILED")
    row(device, gpu, "ran" if gpu else "FAILED")
    sys.exit(1)
# Every output must be there on both sides with the same shape and count;
# then the worst relative difference over every element.
worst, problems = 0.0, []
if set(cpu["outputs"]) != set(gpu["outputs"]):
    problems.append(f"outputs {sorted(cpu['outputs'])} vs {sorted(gpu['outputs'])}")
for key, ref in cpu["outputs"].items():
    got = gpu["outputs"].get(key)
    if got is None:
        continue
    if got.get("shape") != ref.get("shape") or len(got.get("data", [])) != len(ref.get("data", [])):
        problems.append(f"{key}: shape {got.get('shape')} vs {ref.get('shape')}")
        continue
    for x, y in zip(got["data"], ref["data"]):
        if isinstance(x, str) or isinstance(y, str):
            worst = max(worst, 0.0 if x == y else float("inf"))
        elif not (math.isfinite(x) and math.isfinite(y)):
            worst = float("inf")  # NaN or infinity is never "the same"
        else:
            worst = max(worst, abs(x - y) / max(abs(y), 1e-3))
if not cpu["outputs"]:
    problems.append("no outputs")
if problems:
    verdict = "DIFFER: " + "; ".join(problems)
elif worst <= 1e-3:
    verdict = f"same within 1e-3 (worst {worst:.1e})"
else:
    verdict = f"DIFFER (worst relative {worst:.1e})"
row("cpu", cpu, "reference")
row(device, gpu, verdict)
sys.exit(0 if verdict.startswith("same") else 1)
EOF
  done
  return $status
}

case "${1:-}" in
  prepare) [ -n "${2:-}" ] || fail "usage: gpu-check.sh prepare DIR"; prepare "$2" ;;
  run) [ -n "${2:-}" ] || fail "usage: gpu-check.sh run DIR [--ep-library NAME=PATH]"; run "${@:2}" ;;
  *) fail "usage: gpu-check.sh prepare DIR | run DIR [--ep-library NAME=PATH]" ;;
esac
