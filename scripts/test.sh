#!/usr/bin/env bash
# Runs every check and test: formatting, clippy (warnings are errors), the generated example fixtures are current, and
# the whole test suite (the real models set up first: scripts/real_models.sh).
# The recipes' reference outputs of the example
# packages are current (numpy references, independent of the runner). The shared corpus is read from $WFSTUDIO_SHARED
# (default ../shared); under CI=true a missing corpus fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# A clean clone gains nothing from incremental caches; they only fill the disk.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi
scripts/setup.sh
cargo fmt --all -- --check
.venv/bin/python scripts/gen_fixtures.py --check
.venv/bin/python tests/reference/diffusion_reference.py check fixtures/examples
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo build --locked -p wfstudio
scripts/real_models.sh package target/debug/wfstudio
# The prepared GPU check (a release build) must fit its budget; a test runs
# it on the CPU plugin.
scripts/gpu-check.sh prepare target/gpu-check >/dev/null
cargo test --workspace --locked
