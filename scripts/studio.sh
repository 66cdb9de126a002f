#!/usr/bin/env bash
# Builds Workflow Studio and opens the studio window on the bundled example
# package (a tiny denoising loop that draws a smiley). Without a display it
# says so and does the headless part instead: check the package, run it on
# ONNX Runtime and write the picture to target/example-output/image.png.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -p wfstudio
example=fixtures/examples/tiny-denoise
if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
  exec ./target/release/wfstudio open "$example"
fi
echo "studio.sh: no display (DISPLAY/WAYLAND_DISPLAY unset); running the example headless" >&2
./target/release/wfstudio check "$example"
./target/release/wfstudio run "$example" --recipe "$example/recipes/smiley.json" --out target/example-output
./target/release/wfstudio open "$example" --screenshot target/example-output/studio.png --quit 2>/dev/null \
  || xvfb-run -a -s "-screen 0 1600x1000x24" ./target/release/wfstudio open "$example" \
       --screenshot target/example-output/studio.png --quit
echo "wrote target/example-output/image.png and target/example-output/studio.png"
