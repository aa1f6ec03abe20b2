#!/usr/bin/env bash
# One-time set-up on a fresh Debian machine (idempotent): system packages the tests use (Redis, Chromium,
# a Java runtime for Spark when the machine has none), then leaselog itself with the extras the tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
java -version >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -e '.[dev,bench,spark,s3,http]' 2>&1 | grep -v -e '^WARNING: Running pip as' -e 'is ignored: it is neither' || true
