#!/usr/bin/env bash
# scripts/bench-scale.sh — the scale model (pkg/cost/scale): the deployed design at 50,000,
# 500,000 and 5,000,000 events/s of 1 KB set against AWS's published limits, priced with
# pkg/cost's prices. Prints the Markdown table of docs/BENCHMARKS.md ("The scale model")
# and redraws docs/img/scale-limits.png. Needs no emulator and no network: the model's
# per-append counts are pkg/cost's, which TestInputsAreMeasured (pkg/cost/scale) ties to
# the counts measured on the emulator.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go run ./internal/benchscale --plot docs/img/scale-limits.png "$@"
