#!/usr/bin/env bash
# infra/test.sh — the CI checks of the CDK stack (issue "Infrastructure as code"), from any
# directory, offline once its dependencies are installed:
#   1. gofmt, go vet and the awscdk/v2/assertions tests of the infra module (go test ./...
#      in infra/, its own Go module);
#   2. `npx aws-cdk synth` from the repository root with the CLI pinned in package.json
#      (npm ci), network namespaced away when `unshare -n` is available;
#   3. the example subscriber app (infra/examples/subscriber, a module of its own as a
#      user's app is): go vet, its template test, and `npx aws-cdk synth` in its directory;
#   4. `npx aws-cdk synth -c strata:kafkaGateway=true` (the Kafka gateway's container
#      image asset staged, never built) with a `docker` on PATH that fails whenever it is
#      run: synth needs no Docker engine;
#   5. cfn-lint (pinned in infra/requirements-lint.txt, installed into infra/.venv) on the
#      CLI's templates and those the tests synthesized (the construct with every option,
#      managed instances included, the stack with the Kafka gateway, the attaching
#      stacks): no errors (warnings are printed, not fatal).
# The modules build against the checkout through infra/go.work and
# infra/examples/subscriber/go.work (their go.mod files require releases, with no
# replace: infra/README.md, "Attach from your own app").
# Function assets: when scripts/build-functions.sh exists the functions are built first
# and synth requires them; otherwise synth uses the app's placeholder assets (see
# infra/README.md). STRATA_INFRA_PLACEHOLDERS=1 skips the build.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION=1 CDK_DISABLE_VERSION_CHECK=true CDK_DISABLE_CLI_TELEMETRY=true
example=infra/examples/subscriber

step() { printf '\n== %s\n' "$*"; }

step "gofmt, go vet (infra module)"
unformatted="$(gofmt -l infra)"
if [[ -n "$unformatted" ]]; then
	echo "gofmt needed: $unformatted" >&2
	exit 1
fi
go -C infra vet ./...
go -C "$example" vet ./...

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

step "go test ./... (infra module: assertions on the synthesized templates)"
mkdir -p "$out/tests"
STRATA_INFRA_TEMPLATES="$out/tests" go -C infra test -count=1 ./...

step "go test ./... ($example: assertions on its synthesized template)"
STRATA_INFRA_TEMPLATES="$out/tests" go -C "$example" test -count=1 ./...

step "npm ci (aws-cdk CLI pinned in package.json)"
npm ci --no-audit --no-fund --loglevel=error

context=()
if [[ "${STRATA_INFRA_PLACEHOLDERS:-}" != 1 && -x scripts/build-functions.sh ]]; then
	step "scripts/build-functions.sh"
	scripts/build-functions.sh
	context=(-c strata:requireAssets=true)
fi

offline=()
if unshare -n true 2>/dev/null; then
	offline=(unshare -n) # no network at all: synth must need none
fi

step "npx aws-cdk synth${offline:+ (offline)}"
"${offline[@]}" npx --no-install aws-cdk synth --quiet --no-notices "${context[@]}" -o "$out/synth" >/dev/null
test -s "$out/synth/Strata.template.json"

step "npx aws-cdk synth -c strata:kafkaGateway=true${offline:+ (offline)}, no Docker engine"
mkdir -p "$out/nodocker"
printf '#!/bin/sh\necho "docker run during synth: $*" >&2\nexit 1\n' >"$out/nodocker/docker"
chmod +x "$out/nodocker/docker"
PATH="$out/nodocker:$PATH" CDK_DOCKER="$out/nodocker/docker" "${offline[@]}" npx --no-install aws-cdk synth --quiet --no-notices "${context[@]}" \
	-c strata:kafkaGateway=true -c strata:stackName=StrataKafka -o "$out/synth-kafka" >/dev/null
test -s "$out/synth-kafka/StrataKafka.template.json"
grep -q '"AWS::ECS::Service"' "$out/synth-kafka/StrataKafka.template.json"
ls "$out"/synth-kafka/asset.*/Dockerfile >/dev/null # the image's build context, staged

step "npx aws-cdk synth in $example${offline:+ (offline)}: a user's app attaching to the stack above"
mkdir -p "$out/subscriber-asset"
printf '#!/bin/sh\nexit 1\n' >"$out/subscriber-asset/bootstrap" # the CI stand-in for its built handler
(cd "$example" && "${offline[@]}" npx --no-install aws-cdk synth --quiet --no-notices \
	-c subscriber:asset="$out/subscriber-asset" -o "$out/subscriber" >/dev/null)
test -s "$out/subscriber/Billing.template.json"

step "cfn-lint (infra/.venv)"
venv=infra/.venv
if ! "$venv/bin/python" -c 'import sys' 2>/dev/null || ! cmp -s infra/requirements-lint.txt "$venv/requirements-lint.txt"; then
	rm -rf "$venv"
	python3 -m venv "$venv"
	"$venv/bin/pip" install --quiet --disable-pip-version-check -r infra/requirements-lint.txt
	cp infra/requirements-lint.txt "$venv/requirements-lint.txt"
fi
"$venv/bin/cfn-lint" --version
# The apps' templates from the CLI (the default stack, the stack with the Kafka
# gateway), and the tests' (the app's stack with and without the gateway, the construct
# with every option set: managed instances, prefixes, a dead-letter topic, grants; the
# attaching stacks).
templates=("$out/synth/Strata.template.json" "$out/synth-kafka/StrataKafka.template.json" "$out/subscriber/Billing.template.json" "$out"/tests/*.template.json)
[[ ${#templates[@]} -eq 8 ]] || { echo "want 8 templates, have: ${templates[*]}" >&2; exit 1; }
"$venv/bin/cfn-lint" --non-zero-exit-code error -- "${templates[@]}"

step "infra: ok"
