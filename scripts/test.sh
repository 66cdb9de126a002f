#!/usr/bin/env bash
# Runs every check and test: formatting, clippy (warnings are errors, also
# with the `cuda` feature), the generated example fixtures are current, and
# the whole test suite. The recipes' reference outputs of the example
# packages are current (numpy references, independent of the runner). The shared corpus is read from $WFSTUDIO_SHARED
# (default ../shared); under CI=true a missing corpus fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all -- --check
.venv/bin/python scripts/gen_fixtures.py --check
.venv/bin/python tests/reference/diffusion_reference.py check fixtures/examples
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy -p wfstudio-runner --features cuda --locked -- -D warnings
cargo test --workspace --locked
