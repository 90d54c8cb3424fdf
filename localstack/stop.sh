#!/usr/bin/env bash
# Stop the emulator start.sh started on ${STRATA_EMULATOR_PORT:-4566}, by the pid it recorded.
# An emulator started some other way (LocalStack, a manual moto_server) is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
port="${STRATA_EMULATOR_PORT:-4566}"
pidfile="$here/.venv/run/moto-$port.pid"

if [ ! -f "$pidfile" ]; then
	echo "emulator: no pid file $pidfile; nothing to stop" >&2
	exit 0
fi
pid="$(cat "$pidfile")"
# Only signal the pid if it still is our launcher (a pid can be reused after a crash).
cmdline() {
	if [ -r "/proc/$1/cmdline" ]; then tr '\0' ' ' <"/proc/$1/cmdline"; else ps -p "$1" -o args= 2>/dev/null; fi
}
if [ -n "$pid" ] && cmdline "$pid" | grep -q moto_server.py; then
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "emulator: pid $pid ignored SIGTERM; sending SIGKILL" >&2
		kill -9 "$pid" 2>/dev/null || true
	fi
	echo "emulator: stopped pid $pid" >&2
else
	echo "emulator: pid $pid is not running moto_server.py; removing stale pid file" >&2
fi
rm -f "$pidfile"
