#!/usr/bin/env bash
# Resolves Apache Kafka (the broker, its tools, the Java client and Kafka Connect with the
# FileStream connectors; versions in internal/kafkaref/pom.xml) from Maven Central into
# ~/.m2 with Maven, and prints the path of a file holding their Java classpath. A classpath
# already written whose jars are all still there is reused without running Maven, so a
# machine that keeps ~/.m2 fetches nothing the second time. Needs mvn and java.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$root/internal/kafkaref/pom.xml"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")"
sum="$(sha256sum "$pom" | cut -c1-12)"
cache="${STRATA_KAFKA_CACHE:-$HOME/.cache/strata-kafka}"
out="$cache/kafka-$version-$sum.classpath"

complete() {
	[ -s "$out" ] || return 1
	local jar
	while IFS= read -r jar; do
		[ -f "$jar" ] || return 1
	done < <(tr ':' '\n' <"$out")
}

if ! complete; then
	command -v mvn >/dev/null || { echo "kafka-dist.sh: mvn is not installed (apt-get install maven)" >&2; exit 1; }
	mkdir -p "$cache"
	echo "kafka-dist.sh: resolving Apache Kafka $version from Maven Central into ~/.m2" >&2
	mvn -q -B -f "$pom" dependency:build-classpath -Dmdep.outputFile="$out.tmp" >&2
	mv "$out.tmp" "$out"
	complete || { echo "kafka-dist.sh: the classpath names jars that are missing" >&2; exit 1; }
fi
echo "$out"
