#!/usr/bin/env bash
# The project's test command (README): go vet, then every package's tests against the AWS
# emulator on 127.0.0.1:4566, then every fuzz target for a few seconds on top of its
# committed corpus (scripts/fuzz.sh, about a minute), then Schemathesis against a real
# `strata dev` (scripts/schemathesis.sh, 75 s), awscurl and franz-go's pkg/kgo tests
# against the Kafka gateway; the CDK stack's checks (infra/test.sh) run beside the Go
# tests. If nothing answers on the emulator's port, it starts the moto launcher
# (localstack/start.sh) and stops it on exit; an emulator already running (moto or
# LocalStack) is used as is and left running.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

port=4566
export STRATA_AWS_ENDPOINT="http://127.0.0.1:$port"
export STRATA_REQUIRE_EMULATOR=1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1

answers() {
	python3 - "$port" <<'PY'
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/_strata/health", timeout=1)
except urllib.error.HTTPError:
    pass
except Exception:
    sys.exit(1)
PY
}

# What the run started is stopped on exit: the emulator (when this script started it),
# the franz-go tests' emulator and the checks running beside the Go tests.
started=0
side_pids=()
kgo_port=$((port + 1))
killtree() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do killtree "$c"; done
	kill "$1" 2>/dev/null || true
}
cleanup() {
	for p in "${side_pids[@]}"; do killtree "$p"; done
	STRATA_EMULATOR_PORT="$kgo_port" bash localstack/stop.sh >/dev/null 2>&1 || true
	if [ "$started" = 1 ]; then STRATA_EMULATOR_PORT="$port" bash localstack/stop.sh; fi
}
trap cleanup EXIT

if answers; then
	echo "test.sh: using the emulator already answering on 127.0.0.1:$port" >&2
else
	STRATA_EMULATOR_PORT="$port" bash localstack/start.sh
	started=1
fi

go vet ./...
# The benchmark drivers (cmd/strata/bench*.go) are behind the bench build tag, out of the
# binary users run: vet and test them too.
go vet -tags bench ./cmd/strata
# The Kafka checks against a real Apache Kafka broker, the Java client, librdkafka and
# Kafka Connect (internal/kafkacompat) run in it: scripts/kafka-clients.sh installs the
# pinned confluent-kafka and fetches Kafka from Maven Central into ~/.m2, once.
STRATA_KAFKA_PYTHON="$(bash scripts/kafka-clients.sh --python)"
export STRATA_KAFKA_PYTHON

# The CDK stack's checks (infra/test.sh: its module's tests, offline synth, cfn-lint)
# share nothing with the Go tests and run beside them, their output in a file printed
# when they end. franz-go's pkg/kgo tests run after the Go tests, alone: their consumer
# groups' session and rebalance timeouts are real time, and a gateway starved of CPU by
# the Go tests beside it lets members expire (UNKNOWN_MEMBER_ID in TestGroupETL).
side="$(mktemp -d)"
side_names=()
side() {
	local name="$1"
	shift
	("$@") >"$side/$name.log" 2>&1 &
	side_pids+=($!)
	side_names+=("$name")
}
side infra bash infra/test.sh

# No -race on the whole tree: too slow on 2 cores.
go test -count=1 -timeout 15m -tags bench ./...
# Bounded: 2 s per fuzz target, 75 s of Schemathesis, a few seconds of awscurl (each
# script installs nothing but its own pinned tool, once).
STRATA_FUZZTIME="${STRATA_FUZZTIME:-2s}" bash scripts/fuzz.sh
STRATA_SCHEMATHESIS_SECONDS="${STRATA_SCHEMATHESIS_SECONDS:-75}" bash scripts/schemathesis.sh
# The API Gateway test front's SigV4 verifier against awscurl, a signer nobody here wrote.
bash scripts/awscurl.sh
# franz-go's pkg/kgo tests against strata dev --kafka, both backends (the emulator one on
# an emulator of its own).
STRATA_EMULATOR_PORT="$kgo_port" bash localstack/start.sh
STRATA_AWS_ENDPOINT="http://127.0.0.1:$kgo_port" bash scripts/kgo-tests.sh

status=0
for i in "${!side_pids[@]}"; do
	rc=0
	wait "${side_pids[$i]}" || rc=$?
	echo "== ${side_names[$i]} (exit $rc)" >&2
	cat "$side/${side_names[$i]}.log" >&2
	[ "$rc" = 0 ] || status=1
done
side_pids=()
rm -rf "$side"
exit "$status"
