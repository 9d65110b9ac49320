#!/usr/bin/env bash
# Runs every test of every Go module of the repository with the race detector: the root module
# (the core) and every module below it with its own go.mod (ha/etcd, metrics/otel,
# rest/web/browsertest, examples/hafailover, transport/grpc, examples/cluster), found by their
# go.mod files.
# Modules are downloaded through the Go module proxy on the first run; the etcd tests start a
# real etcd server from its Go module. -race needs cgo and a C compiler: if none is found, it is
# installed with apt-get where that exists. The dashboard's browser test (rest/web/browsertest)
# drives a headless Chromium: if no Chromium or Chrome binary is found,
# rest/web/browsertest/chromium.sh installs Debian's chromium with apt-get (without a browser that
# test fails, it never skips). Extra arguments are passed to every `go test`, e.g.
# ./test.sh -count=1 or ./test.sh -run TestX. A module whose tests fail does not stop the others:
# every module runs, the failed ones are listed at the end, and the exit status is 1 if any failed.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v "$(go env CC)" >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "== no C compiler for -race: apt-get install gcc"
    . scripts/apt-get.sh
    apt_get update -qq && apt_get install -y -qq gcc libc6-dev
  else
    echo "test.sh: -race needs a C compiler ($(go env CC)); install one" >&2; exit 1
  fi
fi
if [ -f rest/web/browsertest/go.mod ]; then
  rest/web/browsertest/chromium.sh
fi
mapfile -t modules < <(find . -name go.mod -not -path './.git/*' | sed 's|/go.mod$||' | sort)
failed=()
for m in "${modules[@]}"; do
  echo "== go test -race${*:+ $*} ./...   (module $m)"
  (cd "$m" && go mod download && go test -race "$@" ./...) || failed+=("$m")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED: ${#failed[@]} of ${#modules[@]} modules: ${failed[*]} (each one's FAIL lines are above)"
  exit 1
fi
echo "== every module passed: ${modules[*]}"
