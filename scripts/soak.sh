#!/usr/bin/env bash
# The long soak and crash runs (docs/RELIABILITY.md): TestSoak for SOAK_DURATION
# (default 10m) with SOAK_FAULT_RATE injected AWS faults (default 0.05; SOAK_SEED
# reproduces a run), then TestDevKill9Rounds with STRATA_CRASH_ROUNDS kill -9 restarts
# per backend (default 30). CI runs the same tests within `go test ./...` at 60 s and 10
# rounds. The emulator is the one at 127.0.0.1:${STRATA_EMULATOR_PORT:-4566}; when nothing
# answers there, localstack/start.sh starts it and it is stopped on exit. The figures
# are printed and, for the soak, written to $SOAK_REPORT (default /tmp/strata-soak-report.txt).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

port="${STRATA_EMULATOR_PORT:-4566}"
export STRATA_AWS_ENDPOINT="http://127.0.0.1:$port"
export STRATA_REQUIRE_EMULATOR=1
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
export SOAK_DURATION="${SOAK_DURATION:-10m}"
export SOAK_REPORT="${SOAK_REPORT:-${TMPDIR:-/tmp}/strata-soak-report.txt}"
export STRATA_CRASH_ROUNDS="${STRATA_CRASH_ROUNDS:-30}"

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

if answers; then
	echo "soak.sh: using the emulator already answering on 127.0.0.1:$port" >&2
else
	STRATA_EMULATOR_PORT="$port" bash localstack/start.sh
	trap 'STRATA_EMULATOR_PORT="$port" bash localstack/stop.sh' EXIT
fi

# SOAK_TIMEOUT bounds the soak test: the load, up to 90 s of catch-up, the audit.
go test -count=1 -v -timeout "${SOAK_TIMEOUT:-3h}" -run '^TestSoak$' ./internal/soak
go test -count=1 -v -timeout 60m -run '^TestDevKill9Rounds$' ./cmd/strata
