#!/usr/bin/env bash
# Makes sure a Chromium (or Chrome) binary is on PATH for the dashboard's browser test
# (rest/web/browsertest): if none of chromium, chromium-browser, google-chrome, google-chrome-stable
# is found, Debian's chromium package is installed with apt-get (with sudo when not root; waiting
# for another apt run that holds the package locks, scripts/apt-get.sh).
# test.sh runs it before the tests; it exits non-zero when no browser can be had, so the browser
# test is never skipped for want of one.
set -euo pipefail
for b in chromium chromium-browser google-chrome google-chrome-stable headless-shell; do
  if command -v "$b" >/dev/null 2>&1; then exit 0; fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium.sh: the dashboard's browser test needs Chromium and there is no apt-get; install chromium" >&2
  exit 1
fi
echo "== no Chromium for the dashboard's browser test: apt-get install chromium"
. "$(dirname "$0")/../../../scripts/apt-get.sh"
apt_get update -qq
apt_get install -y -qq --no-install-recommends chromium fonts-dejavu-core
command -v chromium >/dev/null 2>&1 || { echo "chromium.sh: chromium still not on PATH after apt-get" >&2; exit 1; }
