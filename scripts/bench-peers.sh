#!/usr/bin/env bash
# Local throughput of `strata dev` against NATS JetStream and Redis Streams on loopback
# (docs/BENCHMARKS.md, "Local throughput against peers"). Builds strata and nats-server
# (Go module proxy) into bin/ (git-ignored), uses Debian's redis-server
# (apt-get install -y redis-server), then runs
# `strata bench peers`, which starts, drives, stops and removes each server itself.
# Extra arguments go to `strata bench peers` (e.g. --records 50000 --runs 1).
set -euo pipefail
cd "$(dirname "$0")/.."
NATS_VERSION="${NATS_VERSION:-v2.15.3}"
mkdir -p bin
go build -tags bench -o bin/strata ./cmd/strata
if [ ! -x bin/nats-server ]; then
  GOBIN="$PWD/bin" go install "github.com/nats-io/nats-server/v2@${NATS_VERSION}"
fi
REDIS="$(command -v redis-server || true)"
if [ -z "$REDIS" ]; then
  echo "bench-peers: redis-server not found (apt-get install -y redis-server); Redis is skipped" >&2
fi
exec timeout 3600 bin/strata bench peers --strata-bin bin/strata --nats-server bin/nats-server \
  --redis-server "$REDIS" --plot docs/img/peers-throughput.png "$@"
