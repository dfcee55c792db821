#!/bin/sh
# Approvals API under load: ~1,000 pending requests, 50 concurrent clients
# listing and deciding for 30 s against real `warden serve` processes on
# loopback. Prints p50/p99 latencies, how fast a new request reaches the
# servers' event streams, and fails on any lost or double decision.
#
#   bench/approvals.sh                          SQLite, one server
#   bench/approvals.sh -store postgres -replicas 3
#   bench/approvals.sh -rate 400               offered load: 400 list+decide
#                                               pairs/s on a fixed schedule
#
# With -store postgres it runs under scripts/postgres (a throwaway server)
# unless WARDEN_TEST_POSTGRES_URL already names one.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/warden
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/warden
go build -o "$(dirname "$bin")/bench" ./bench/approvals
case " $* " in
*" postgres "*|*"=postgres "*)
	if [ -z "${WARDEN_TEST_POSTGRES_URL:-}" ]; then
		status=0
		./scripts/postgres run "$(dirname "$bin")/bench" -warden "$bin" "$@" || status=$?
		exit $status
	fi
	;;
esac
"$(dirname "$bin")/bench" -warden "$bin" "$@"
