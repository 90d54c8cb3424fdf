#!/usr/bin/env bash
# The cost tables and plots of docs/BENCHMARKS.md §1 in one command: counts
# Strata's AWS requests on the moto emulator, prices the design workload (50,000 events/s
# of 1 KB, 24 h) with `strata bench cost`, redraws docs/img/cost-*.png and writes the
# report to build/bench-cost.txt (and stdout).
#   STRATA_EMULATOR_PORT  emulator port (default 4566); an emulator already answering
#                         there is used and left running, one this script starts is stopped
#   extra arguments       go to `strata bench cost`, e.g. after merging the levers:
#                         scripts/bench-cost.sh --built function-url,tier,folded,fenced,consumer-window,manifest
#
# scripts/bench-cost.sh --run measures the deployment instead: internal/stackrun's
# TestCostRunMatchesTheModel drives a scaled-down workload through the synthesized stack
# for STRATA_COST_RUN_SECONDS (default 60), counts every AWS request and log byte of every
# function, writes pkg/cost/testdata/costrun.json and fails if pkg/cost's deployment model
# misses a line or is more than 10% off one; then the cost-run tables of
# docs/BENCHMARKS.md are regenerated from that file (build/cost-run.txt keeps the log).
# scripts/bench-cost.sh --run headline runs the headline design instead (the function URL,
# the api on Lambda Managed Instances, a 30 ms group-commit window; STRATA_COST_RUN_CONFIG)
# and writes pkg/cost/testdata/costrun-headline.json (build/cost-run-headline.txt).
# scripts/bench-cost.sh --run url runs the default stack behind the function URL (the api on
# demand, no API Gateway) and writes pkg/cost/testdata/costrun-url.json.
# scripts/bench-cost.sh --run aligned runs the headline design with the producers aligned
# to the clock (the SDK's AlignLinger, 4 slots) and writes pkg/cost/testdata/costrun-aligned.json.
set -euo pipefail
cd "$(dirname "$0")/.."
port="${STRATA_EMULATOR_PORT:-4566}"
pidfile="localstack/.venv/run/moto-$port.pid"
started=0
if [ ! -f "$pidfile" ]; then
	started=1
fi
STRATA_EMULATOR_PORT="$port" bash localstack/start.sh
if [ "$started" = 1 ] && [ -f "$pidfile" ]; then
	trap 'STRATA_EMULATOR_PORT="$port" bash localstack/stop.sh' EXIT
fi
mkdir -p build
if [ "${1:-}" = "--run" ]; then
	status=0
	config="${2:-default}"
	suffix=""
	if [ "$config" != default ]; then
		suffix="-$config"
	fi
	AWS_ENDPOINT_URL="http://127.0.0.1:$port" STRATA_REQUIRE_EMULATOR=1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
		STRATA_COST_RUN=1 STRATA_COST_RUN_CONFIG="$config" STRATA_COST_RUN_OUT="$PWD/pkg/cost/testdata/costrun$suffix.json" STRATA_COST_RUN_SECONDS="${STRATA_COST_RUN_SECONDS:-60}" \
		go test -count=1 -timeout 40m -run '^TestCostRunMatchesTheModel$' -v ./internal/stackrun >"build/cost-run$suffix.txt" 2>&1 || status=$?
	grep -E '^\s+costrun_test.go:[0-9]+: cost:' "build/cost-run$suffix.txt" || true
	STRATA_UPDATE_DOCS=1 go test -count=1 -run '^TestCostRunTablesInTheDocs$' ./pkg/cost
	awk '/<!-- cost-run:begin/{on=1;next} /<!-- cost-run:end/{on=0} on' docs/BENCHMARKS.md
	exit "$status"
fi
go build -tags bench -o build/strata-bench ./cmd/strata
AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
	build/strata-bench bench cost --plot-dir docs/img "$@" | tee build/bench-cost.txt
