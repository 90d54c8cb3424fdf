#!/usr/bin/env bash
# Throughput through the Kafka gateway against a real Apache Kafka broker, in one run, with
# Kafka's own perf tools (versions in internal/kafkaref/pom.xml, fetched by
# scripts/kafka-dist.sh): ProducerPerformance (acks=all, 1 KB records) and
# ConsumerPerformance (a consumer group), plus a franz-go producer (idempotent, default
# batching) and a franz-go consumer by assignment (no group).
# The gateway is `strata dev --kafka` on the local embedded backend, which fsyncs the segment
# and the bbolt commit before every acknowledgement; the broker is a single-node KRaft broker
# with Kafka's defaults (no fsync per ack: the page cache and replication are its
# durability). One target runs at a time, the gateway first, then the broker, back to
# back; the load average is printed before each and at the end. docs/BENCHMARKS.md has
# runs' figures.
#
# Knobs: STRATA_BENCH_RECORDS (default 100000 records of 1 KB), STRATA_BENCH_PARTITIONS (3),
# STRATA_BENCH_PRODUCER_PROPS (extra producer properties, e.g. "linger.ms=20").
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
records="${STRATA_BENCH_RECORDS:-100000}"
partitions="${STRATA_BENCH_PARTITIONS:-3}"
extra="${STRATA_BENCH_PRODUCER_PROPS:-}"
tmp="$(mktemp -d /tmp/bench-kafka.XXXXXX)"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

cp="$(cat "$(bash scripts/kafka-dist.sh)")"
go build -o "$tmp/strata" ./cmd/strata
go build -o "$tmp/kafkaref" ./internal/kafkaref/cmd/kafkaref
java_cmd=(java -Xmx1g -cp "$cp" -Dorg.apache.logging.log4j.level=WARN)
java_run() { "${java_cmd[@]}" "$@"; }

# create_topic ADDR TOPIC: a topic of $partitions partitions on ADDR.
create_topic() {
	java_run org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --create --topic "$2" \
		--partitions "$partitions" --replication-factor 1 >/dev/null
}

# load is the machine's load average now: the two targets share the machine with whatever
# else runs, so a run's figures mean most as a ratio, with the load beside them.
load() { echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"; }

# cpu PID: the user+system CPU time so far of PID and every process below it (the
# reference broker is a JVM under kafkaref), in clock ticks, from /proc/*/stat.
cpu() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '
		{ sub(/\(.*\)/, "x"); ppid[$1] = $4; ticks[$1] = $14 + $15 }
		END {
			for (p in ticks) {
				q = p
				for (n = 0; n < 64 && q != root && q in ppid; n++) q = ppid[q]
				if (q == root) total += ticks[p]
			}
			print total + 0
		}'
}

# cpu_since PID TICKS: the CPU seconds PID used since it had used TICKS.
cpu_since() { awk -v a="$2" -v b="$(cpu "$1")" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", (b - a) / hz}'; }

# wait_line FILE PATTERN: the first line of FILE matching PATTERN, within 120 s.
wait_line() {
	for _ in $(seq 1200); do
		if line="$(grep -m1 "$2" "$1" 2>/dev/null)"; then
			echo "$line"
			return 0
		fi
		sleep 0.1
	done
	echo "bench-kafka.sh: no \"$2\" in $1:" >&2
	tail -20 "$1" >&2
	return 1
}

# bench NAME ADDR GROUPS PID: create a topic, produce, consume (in a group when GROUPS is
# true); PID is the server's process, whose CPU time each step prints beside the client's
# (the two share the machine's cores, so CPU seconds per step say more than MB/s alone).
bench() {
	local name="$1" addr="$2" groups="$3" pid="$4" topic="bench-$1" props t0
	echo "== $name ($addr): $records records of 1024 bytes, $partitions partitions; $(load)"
	create_topic "$addr" "$topic"
	props="bootstrap.servers=$addr acks=all"
	# An idempotent producer needs InitProducerId; where the gateway does not advertise it,
	# both targets produce without, so they run the same producer.
	if [ "$idempotent" = true ]; then props="$props enable.idempotence=true"; else props="$props enable.idempotence=false"; fi
	echo "producer ($props $extra):"
	t0="$(cpu "$pid")"
	# shellcheck disable=SC2086
	/usr/bin/time -f "client CPU: %U s user, %S s system" -o "$tmp/time" \
		"${java_cmd[@]}" org.apache.kafka.tools.ProducerPerformance \
		--topic "$topic" --num-records "$records" --record-size 1024 --throughput -1 --producer-props $props $extra | tail -1
	echo "server CPU: $(cpu_since "$pid" "$t0") s; $(cat "$tmp/time")"
	# The same records from a client that batches up to 1 MB a partition (franz-go's
	# default; ProducerPerformance's batch.size is 16 KB), into a topic of its own.
	create_topic "$addr" "$topic-kgo"
	echo "franz-go producer (idempotent, acks=all, no compression):"
	t0="$(cpu "$pid")"
	"$tmp/kafkaref" produce "$addr" "$topic-kgo" "$records"
	echo "server CPU: $(cpu_since "$pid" "$t0") s"
	if [ "$groups" = true ]; then
		echo "ConsumerPerformance (group):"
		java_run org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$addr" --topic "$topic" \
			--num-records "$records" --timeout 120000 --group "perf-$name"
	else
		echo "ConsumerPerformance: not run (the gateway does not advertise JoinGroup yet)"
	fi
	echo "franz-go consumer (assigned partitions):"
	"$tmp/kafkaref" consume "$addr" "$topic" "$records"
}

# The gateway: strata dev --kafka on a fresh data directory.
"$tmp/strata" dev --data-dir "$tmp/strata-data" --addr 127.0.0.1:0 --console=false --kafka 127.0.0.1:0 >"$tmp/strata.log" 2>&1 &
pids+=($!)
gw="$(wait_line "$tmp/strata.log" 'kafka listening on' | awk '{print $NF}')"
apis="$("$tmp/kafkaref" apis "$gw")"
idempotent=false
grep -qx InitProducerID <<<"$apis" && idempotent=true
groups=false
grep -qx JoinGroup <<<"$apis" && groups=true
echo "machine: $(nproc) cores, $(uname -srm); java $(java -version 2>&1 | head -1)"
echo "command: bash scripts/bench-kafka.sh (records=$records partitions=$partitions)"
bench strata "$gw" "$groups" "${pids[0]}"
kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true

# The reference broker.
"$tmp/kafkaref" broker -dir "$tmp/broker" >"$tmp/broker.log" 2>&1 &
pids+=($!)
ref="$(wait_line "$tmp/broker.log" 'kafka broker listening on' | awk '{print $NF}')"
bench kafka "$ref" true "${pids[1]}"
echo "== end; $(load)"
