#!/usr/bin/env bash
# Runs every test of every Go module of the repository with the race detector: the root module
# (the core) and the adapter modules below it that have their own go.mod (ha/etcd, ...). Modules
# are downloaded through the Go module proxy on the first run; nothing else needs installing (the
# etcd module's tests start a real etcd server from its Go module). Extra arguments are passed to
# every `go test`, e.g. ./test.sh -count=1 or ./test.sh -run TestX.
set -euo pipefail
cd "$(dirname "$0")"
mapfile -t modules < <(find . -name go.mod -not -path './.git/*' -printf '%h\n' | sort)
for m in "${modules[@]}"; do
  echo "== go test -race $* ./...   (module $m)"
  (cd "$m" && go mod download && go test -race "$@" ./...)
done
