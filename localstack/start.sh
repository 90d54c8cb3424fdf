#!/usr/bin/env bash
# Start the moto emulator (moto_server.py) on 127.0.0.1:${STRATA_EMULATOR_PORT:-4566} in the
# background and wait until it answers. On first use it creates localstack/.venv and installs
# requirements.txt into it (needs only python3). Idempotent: if something already answers on
# the port it does nothing. Stop it with stop.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
port="${STRATA_EMULATOR_PORT:-4566}"
venv="$here/.venv"
run="$venv/run"
pidfile="$run/moto-$port.pid"
logfile="$run/moto-$port.log"
timeout_s="${STRATA_EMULATOR_START_TIMEOUT:-60}"
py="$venv/bin/python"

# answers exits 0 when an HTTP server answers on the port (any status).
answers() {
	"$1" - "$port" <<'PY'
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/_strata/health", timeout=1)
except urllib.error.HTTPError:
    pass
except Exception:
    sys.exit(1)
PY
}

# installed exits 0 when the venv holds the moto version pinned in requirements.txt.
installed() {
	[ -x "$py" ] || return 1
	want="$(sed -n 's/^moto\[server\]==\([^[:space:]]*\).*/\1/p' "$here/requirements.txt")"
	"$py" - "$want" <<'PY' 2>/dev/null
import sys
import moto, moto.server, moto.s3, moto.dynamodb  # noqa: F401  (moto[server] extras present)
sys.exit(0 if moto.__version__ == sys.argv[1] else 1)
PY
}

if answers python3; then
	echo "emulator: something already answers on 127.0.0.1:$port; not starting another" >&2
	exit 0
fi

if ! installed; then
	echo "emulator: installing $(grep -v '^#' "$here/requirements.txt" | xargs) into $venv" >&2
	[ -x "$py" ] || python3 -m venv "$venv"
	"$py" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
	installed || { echo "emulator: install of requirements.txt failed" >&2; exit 1; }
fi

mkdir -p "$run"
nohup "$py" "$here/moto_server.py" --host 127.0.0.1 --port "$port" >"$logfile" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$pidfile"

deadline=$((SECONDS + timeout_s))
until answers "$py"; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "emulator: moto_server.py exited during start-up; log $logfile:" >&2
		tail -n 30 "$logfile" >&2
		rm -f "$pidfile"
		exit 1
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		echo "emulator: no answer on 127.0.0.1:$port after ${timeout_s}s; stopping pid $pid. Log $logfile:" >&2
		tail -n 30 "$logfile" >&2
		kill "$pid" 2>/dev/null || true
		rm -f "$pidfile"
		exit 1
	fi
	sleep 0.3
done
echo "emulator: moto (requests serialised) ready on http://127.0.0.1:$port, pid $pid, log $logfile" >&2
