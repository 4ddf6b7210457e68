#!/bin/sh
# Regenerate the bundled demo (calibration/ and captures/ at the repository root) from
# scenarios/demo.toml. Deterministic: same scenario and seed, same files.
set -e
cd "$(dirname "$0")/.."
exec python3 -m rigtool.cli simulate scenarios/demo.toml -o . --force "$@"
