#!/bin/sh
# Approvals API under load: ~1,000 pending requests, 50 concurrent clients
# listing and deciding for 30 s against a real `warden serve` on loopback.
# Prints p50/p99 latencies and fails on any lost or double decision.
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/warden
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/warden
go run ./bench/approvals -warden "$bin" "$@"
