#!/usr/bin/env bash
# Builds Workflow Studio and opens the studio window on a package: the
# bundled example (a tiny denoising loop that draws a smiley) by default, or
# the one named, e.g. `scripts/studio.sh fixtures/real/kokoro-tts` (the real
# Kokoro text-to-speech model, installed by the set-up). Without a display
# it says so and does the headless part instead: check the package, run it
# on ONNX Runtime into target/example-output/ (a picture, a WAV, ...) and
# screenshot the window after a run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -p wfstudio
scripts/real_models.sh package target/release/wfstudio
example="${1:-fixtures/examples/tiny-denoise}"
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec ./target/release/wfstudio open "$example"
fi
echo "studio.sh: no display (DISPLAY/WAYLAND_DISPLAY unset); running $example headless" >&2
recipe="$example/recipes/default.json"
[ -f "$recipe" ] || recipe="$(ls "$example"/recipes/*.json | head -n 1)"
out=target/example-output
./target/release/wfstudio check "$example"
./target/release/wfstudio run "$example" --recipe "$recipe" --out "$out"
shot=(open "$example" --recipe "$recipe" --run --screenshot "$out/studio.png" --quit)
./target/release/wfstudio "${shot[@]}" 2>/dev/null \
  || xvfb-run -a -s "-screen 0 1600x1000x24" ./target/release/wfstudio "${shot[@]}"
echo "wrote $(ls "$out" | tr '\n' ' ')into $out (studio.png: the window after the run)"
