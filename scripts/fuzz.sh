#!/usr/bin/env bash
# Runs every fuzz target of the module (each `func FuzzXxx` in a _test.go file) for
# STRATA_FUZZTIME (default 2s) each, on top of its committed corpus (testdata/fuzz) and
# f.Add seeds, which plain `go test` already replays. A crasher is written to the
# package's testdata/fuzz/FuzzXxx by `go test` itself: commit it with the fix. Fuzz
# targets that need the AWS emulator read AWS_ENDPOINT_URL (or STRATA_AWS_ENDPOINT).
#
# The targets run in STRATA_FUZZ_LANES lanes (default 2, one per core), each lane one
# target at a time with one fuzzing worker: a package's targets share a lane, so no two
# targets of one package (which may share fixture names) ever run at once, while one
# lane's build, start-up and corpus replay overlap another's fuzzing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime="${STRATA_FUZZTIME:-2s}"
lanes="${STRATA_FUZZ_LANES:-2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mapfile -t targets < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' pkg cmd internal 2>/dev/null |
	xargs grep -hoE '^func Fuzz[A-Za-z0-9_]*\(' /dev/null --with-filename |
	sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($|./\1 \2|' | sort -u)

# count prints how many files a corpus directory holds (0 when it does not exist).
count() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

# fuzz runs one target; on failure it prints the output's tail and returns 1.
fuzz() {
	local pkg="$1" name="$2" out="$3" corpus before after
	echo "fuzz.sh: $pkg $name for $fuzztime" >&2
	corpus="$pkg/testdata/fuzz/$name"
	before="$(count "$corpus")"
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel 1 "$pkg" >"$out" 2>&1; then
		return 0
	fi
	after="$(count "$corpus")"
	# Go's fuzz coordinator can report its own -fuzztime deadline as a failure
	# (go.dev/issue/75804, fixed in Go 1.27): no input failed and none was written.
	if [ "$after" = "$before" ] && grep -q '^    context deadline exceeded$' "$out" &&
		[ "$(grep -c -- '--- FAIL' "$out")" = 1 ]; then
		echo "fuzz.sh: $name: the coordinator's deadline race (go.dev/issue/75804), no failing input; not a failure" >&2
		return 0
	fi
	echo "fuzz.sh: $pkg $name failed:" >&2
	tail -n 60 "$out" >&2
	return 1
}

# Packages go to lanes in turn, in the sorted order of the targets.
declare -A lane_of=()
next=0
for t in "${targets[@]}"; do
	pkg="${t% *}"
	if [ -z "${lane_of[$pkg]+x}" ]; then
		lane_of[$pkg]=$next
		next=$(((next + 1) % lanes))
	fi
	echo "$t" >>"$work/lane-${lane_of[$pkg]}"
done

start=$SECONDS
pids=()
for ((l = 0; l < lanes; l++)); do
	[ -f "$work/lane-$l" ] || continue
	(
		while read -r pkg name; do
			fuzz "$pkg" "$name" "$work/out-$l" || exit 1
		done <"$work/lane-$l"
	) &
	pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
if [ "$status" != 0 ]; then
	echo "fuzz.sh: a fuzz target failed (above)" >&2
	exit 1
fi
echo "fuzz.sh: ${#targets[@]} fuzz targets in $lanes lanes, $fuzztime each, $((SECONDS - start))s" >&2
