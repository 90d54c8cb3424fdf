#!/usr/bin/env bash
# Builds every Lambda function as build/functions/<name>/bootstrap for the
# provided.al2023 runtime: static (CGO_ENABLED=0), reproducible (-trimpath, no VCS
# stamp, no build id), arm64 unless GOARCH says otherwise; and the Kafka gateway's image
# directory build/functions/kafka-gateway (the strata binary and its Dockerfile, which
# only `cdk deploy` builds into an image).
#
#   scripts/build-functions.sh              # all functions, arm64
#   GOARCH=amd64 scripts/build-functions.sh # for x86_64 functions (or the host, in tests)
#   scripts/build-functions.sh api consumer # only these
#   OUT=/tmp/fns scripts/build-functions.sh # another output directory
set -euo pipefail
cd "$(dirname "$0")/.."

arch="${GOARCH:-arm64}"
out="${OUT:-build/functions}"
if [ "$#" -gt 0 ]; then
  names=("$@")
else
  names=(api dispatch retention consumer compact kafka-gateway)
fi
for name in "${names[@]}"; do
  if [ "$name" = kafka-gateway ]; then
    mkdir -p "$out/$name"
    CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -buildvcs=false \
      -ldflags="-s -w -buildid=" -o "$out/$name/strata" ./cmd/strata
    cp infra/internal/assets/gateway.Dockerfile "$out/$name/Dockerfile"
    echo "build-functions: $out/$name/strata (linux/$arch) and its Dockerfile"
    continue
  fi
  if [ ! -f "functions/$name/main.go" ]; then
    echo "build-functions: no function $name (functions/$name/main.go)" >&2
    exit 2
  fi
  mkdir -p "$out/$name"
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -buildvcs=false \
    -tags lambda.norpc -ldflags="-s -w -buildid=" \
    -o "$out/$name/bootstrap" "./functions/$name"
  echo "build-functions: $out/$name/bootstrap (linux/$arch)"
done
