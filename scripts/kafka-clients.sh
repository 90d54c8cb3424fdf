#!/usr/bin/env bash
# The Kafka checks against software nobody here wrote (internal/kafkacompat): the
# differential test against a real Apache Kafka broker, the Java client, librdkafka
# (confluent-kafka, pinned in scripts/kafkapy/requirements.txt) and Kafka Connect
# standalone, all through the gateway. On first use it creates scripts/kafkapy/.venv
# (git-ignored) with the pinned confluent-kafka, and scripts/kafka-dist.sh fetches Kafka
# into ~/.m2; both are reused afterwards. Needs python3, java, javac and mvn; set
# STRATA_REQUIRE_KAFKA=1 to make a missing one a failure instead of a skip.
#
#   bash scripts/kafka-clients.sh            install what is missing, then run the checks
#   bash scripts/kafka-clients.sh --python   install what is missing, print the venv's python
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$root/scripts/kafkapy"
venv="$here/.venv"
want="$(sed -n 's/^confluent-kafka==\([^[:space:]]*\).*/\1/p' "$here/requirements.txt")"

if [ "$("$venv/bin/python" -m pip show confluent-kafka 2>/dev/null | sed -n 's/^Version: //p')" != "$want" ]; then
	echo "kafka-clients.sh: installing confluent-kafka==$want into $venv" >&2
	[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
fi
if command -v mvn >/dev/null && command -v java >/dev/null; then
	bash "$root/scripts/kafka-dist.sh" >/dev/null
fi

if [ "${1:-}" = --python ]; then
	echo "$venv/bin/python"
	exit 0
fi
cd "$root"
STRATA_KAFKA_PYTHON="$venv/bin/python" go test -count=1 -timeout 15m -v ./internal/kafkaref/... ./internal/kafkacompat
