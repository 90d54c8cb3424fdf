#!/usr/bin/env bash
# Checks internal/apigwtest's SigV4 verifier against awscurl, a signer nobody here wrote
# (pinned in scripts/awscurl/requirements.txt): TestAwscurlAccepted signs requests with it
# and sends them through the SigV4-checking front to the api handler. On first use it
# creates scripts/awscurl/.venv (git-ignored) and installs the pinned version there
# (needs python3 and PyPI).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
here="$root/scripts/awscurl"
venv="$here/.venv"
want="$(sed -n 's/^awscurl==\([^[:space:]]*\).*/\1/p' "$here/requirements.txt")"

if [ "$("$venv/bin/python" -m pip show awscurl 2>/dev/null | sed -n 's/^Version: //p')" != "$want" ]; then
	echo "awscurl.sh: installing awscurl==$want into $venv" >&2
	[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
	"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi

cd "$root"
STRATA_AWSCURL="$venv/bin/awscurl" STRATA_REQUIRE_AWSCURL=1 go test -count=1 -run '^TestAwscurlAccepted$' -v ./internal/apigwtest
