#!/usr/bin/env bash
# Builds Workflow Studio and opens it on the bundled example package.
# Until the studio window lands (issue: the studio window) this runs the
# headless check of the example and prints its canonical form.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -p wfstudio
example=fixtures/examples/tiny-denoise
./target/release/wfstudio check --no-artifacts "$example"
./target/release/wfstudio fmt "$example"
