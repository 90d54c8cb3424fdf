#!/usr/bin/env bash
# Runs franz-go's own integration tests (pkg/kgo, at the version go.mod requires) against
# `strata dev --kafka` on both backends side by side: the embedded local one and the dynamo one (S3 and
# DynamoDB on the emulator at STRATA_AWS_ENDPOINT; skipped with a message when that is unset,
# unless STRATA_REQUIRE_EMULATOR=1). franz-go's source comes from the Go module cache (`go mod
# download`) and is copied to a temporary directory, never into this repository. The tests
# chosen, and why the others are left out, are in docs/KAFKA.md ("franz-go's own tests").
# Exits non-zero when a chosen test fails or strata dev dies or panics.
#
# Knobs: KGO_TEST_RECORDS (records TestGroupETL produces; franz-go's default is 500,000, here
# 2,000), KGO_TEST_MAX_TOPIC_PARTS (caps the 7, 11 and 31 partitions franz-go's topics get;
# uncapped locally, 4 on the emulator), STRATA_KGO_BACKENDS ("local aws" by default),
# STRATA_KGO_LONG=1 (adds the long TestClient_Produce locally).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

mod=github.com/twmb/franz-go
version="$(go list -m -f '{{.Version}}' "$mod")"
dir="$(go mod download -json "$mod@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
[ -d "$dir/pkg/kgo" ] || { echo "kgo-tests.sh: no source of $mod@$version in the module cache" >&2; exit 1; }

work="$(mktemp -d)"
dev_pid=""
stop_dev() {
	if [ -n "$dev_pid" ]; then
		kill "$dev_pid" 2>/dev/null || true
		wait "$dev_pid" 2>/dev/null || true
		dev_pid=""
	fi
}
pids=()
cleanup() {
	stop_dev
	# A backend still running (this script was interrupted): stop it and its strata dev.
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "$work"/dev-*.pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true
	done
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

cp -R "$dir" "$work/franz-go"
chmod -R u+w "$work/franz-go"
# franz-go is its own module: build its test binary there, outside this module and any go.work
# (-trimpath keeps the build cache's entries independent of the temporary directory).
(cd "$work/franz-go/pkg/kgo" && GOWORK=off GOFLAGS=-mod=mod go test -trimpath -c -o "$work/kgo.test" .)
go build -o "$work/strata" ./cmd/strata

# Tests that need only what every gateway has: topics, produce, fetch, offsets.
base=(
	TestPing TestIssue1034 TestUnknownGroupOffsetFetchPinned
	TestIssue325 TestConsumeTopicRetrieval TestConsumeTopicRetrieval_Many
	TestIssue337 TestDirectPartitionPurge TestIssue434 TestAddRemovePartitions
	TestPauseIssue489 TestIssue648 TestIssue810 TestIssue865
	TestHookPollStart
	TestIssue769 TestIssueProduceBrokerTooOldFailsRecords
	TestIssueProduceSyncManualPartitionNegativeDoesNotPanic TestIssue831
)
# Tests that need consumer groups (JoinGroup and the rest), run once the gateway advertises them.
groups=(TestGroupETL TestGroupSimple TestIssue523)
# Static membership is not implemented, and franz-go's ETL turns it on for any JoinGroup v5+.
skip='^TestGroupETL$/^cooperative-sticky$/^static$'
# Local only: TestPauseIssueOct2023 (sequential, a flush per record while pausing and
# resuming) takes 40 s on the emulator, whose requests are serialised.
local_only=(TestPauseIssueOct2023)
# With STRATA_KGO_LONG=1, locally: TestClient_Produce, 20,000 synchronous single-record
# produces to one partition from 50 goroutines, each idempotent batch one fenced append
# (minutes here; over five on the emulator).
long=(TestClient_Produce)

# advertises prints whether the Kafka listener at $1 advertises API key $2 (ApiVersions v0).
advertises() {
	python3 - "$1" "$2" <<'PY'
import socket, struct, sys
host, port = sys.argv[1].rsplit(":", 1)
want = int(sys.argv[2])
s = socket.create_connection((host, int(port)), timeout=5)
body = struct.pack(">hhih", 18, 0, 1, -1)
s.sendall(struct.pack(">i", len(body)) + body)
def read(n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            sys.exit("connection closed")
        b += c
    return b
size, = struct.unpack(">i", read(4))
resp = read(size)
_, err, n = struct.unpack(">ihi", resp[:10])
keys = {struct.unpack(">hhh", resp[10 + 6 * i:16 + 6 * i])[0] for i in range(n)}
print("yes" if err == 0 and want in keys else "no")
PY
}

run_backend() {
	local backend="$1"
	local data="$work/data-$backend"
	local args=(dev --addr 127.0.0.1:0 --data-dir "$data" --kafka 127.0.0.1:0 --retention-interval 1h)
	local tests=("${base[@]}")
	local parts="${KGO_TEST_MAX_TOPIC_PARTS:-}"
	case "$backend" in
	local)
		tests+=("${local_only[@]}")
		[ "${STRATA_KGO_LONG:-}" = 1 ] && tests+=("${long[@]}")
		;;
	aws)
		if [ -z "${STRATA_AWS_ENDPOINT:-}" ]; then
			if [ "${STRATA_REQUIRE_EMULATOR:-}" = 1 ]; then
				echo "kgo-tests.sh: STRATA_REQUIRE_EMULATOR=1 but STRATA_AWS_ENDPOINT is unset" >&2
				return 1
			fi
			echo "kgo-tests.sh: STRATA_AWS_ENDPOINT unset: skipping the dynamo backend" >&2
			return 0
		fi
		local id
		id="kgo$(date +%s)$$"
		args+=(--backend aws --bootstrap --bucket "strata-$id" --table-prefix "$id-")
		parts="${parts:-4}"
		;;
	*)
		echo "kgo-tests.sh: unknown backend $backend" >&2
		return 1
		;;
	esac

	"$work/strata" "${args[@]}" >"$work/dev-$backend.out" 2>"$work/dev-$backend.err" &
	dev_pid=$!
	echo "$dev_pid" >"$work/dev-$backend.pid"
	local addr=""
	for _ in $(seq 1 300); do
		addr="$(sed -n 's/^kafka listening on \(.*\)$/\1/p' "$work/dev-$backend.out")"
		[ -n "$addr" ] && break
		kill -0 "$dev_pid" 2>/dev/null || { cat "$work/dev-$backend.err" >&2; return 1; }
		sleep 0.1
	done
	[ -n "$addr" ] || { echo "kgo-tests.sh: strata dev ($backend) did not start" >&2; return 1; }

	if [ "$(advertises "$addr" 11)" = yes ]; then
		tests+=("${groups[@]}")
	else
		echo "kgo-tests.sh: the gateway advertises no JoinGroup: ${groups[*]} not run" >&2
	fi
	local pattern
	pattern="^($(
		IFS='|'
		echo "${tests[*]}"
	))\$"
	echo "kgo-tests.sh: franz-go $version pkg/kgo against strata dev --kafka $addr ($backend): ${tests[*]}" >&2

	local status=0
	(
		cd "$work/franz-go/pkg/kgo"
		env KGO_SEEDS="$addr" KGO_LOG_LEVEL="${KGO_LOG_LEVEL:-none}" \
			KGO_TEST_RECORDS="${KGO_TEST_RECORDS:-2000}" ${parts:+KGO_TEST_MAX_TOPIC_PARTS="$parts"} \
			"$work/kgo.test" -test.run "$pattern" -test.skip "$skip" -test.timeout 10m -test.v >"$work/kgo-$backend.log" 2>&1
	) || status=$?
	grep -E '^\s*--- (PASS|FAIL|SKIP)' "$work/kgo-$backend.log" >&2 || true
	if [ "$status" -ne 0 ]; then
		echo "kgo-tests.sh: franz-go's tests failed on $backend; their output:" >&2
		grep -v -E '^=== (RUN|PAUSE|CONT)' "$work/kgo-$backend.log" | tail -n 80 >&2
	fi
	if ! kill -0 "$dev_pid" 2>/dev/null; then
		echo "kgo-tests.sh: strata dev ($backend) died during the run:" >&2
		tail -n 30 "$work/dev-$backend.err" >&2
		status=1
	elif grep -q panic "$work/dev-$backend.err"; then
		echo "kgo-tests.sh: strata dev ($backend) logged a panic:" >&2
		grep -A 20 panic "$work/dev-$backend.err" >&2
		status=1
	fi
	stop_dev
	rm -f "$work/dev-$backend.pid"
	return "$status"
}

# The backends run side by side, each with its own strata dev (most of the tests' time is
# spent waiting, not computing); each one's report is printed once it is done.
backends=(${STRATA_KGO_BACKENDS:-local aws})
for backend in "${backends[@]}"; do
	(
		trap stop_dev EXIT
		run_backend "$backend"
	) >"$work/report-$backend" 2>&1 &
	pids+=($!)
done
status=0
for i in "${!backends[@]}"; do
	wait "${pids[$i]}" || status=1
	cat "$work/report-${backends[$i]}" >&2
done
exit "$status"
