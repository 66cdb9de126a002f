#!/usr/bin/env bash
# Builds Workflow Studio and runs it on the bundled example package (a tiny
# denoising loop that draws a smiley). Until the studio window lands this is
# the headless path: check the package, run it on ONNX Runtime and write the
# picture to target/example-output/image.png.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -p wfstudio
example=fixtures/examples/tiny-denoise
./target/release/wfstudio check "$example"
./target/release/wfstudio run "$example" --recipe "$example/recipes/smiley.json" --out target/example-output
echo "wrote target/example-output/image.png"
