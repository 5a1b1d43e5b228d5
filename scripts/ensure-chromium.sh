#!/usr/bin/env bash
# The browser test drives Debian's Chromium at /usr/bin/chromium (CHROMIUM overrides the path).
# Install it when missing; CI runs as root, elsewhere sudo is used when available.
set -euo pipefail
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  echo "chromium: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium missing at $CHROMIUM and apt-get is unavailable; install Chromium and set CHROMIUM=<path>" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "chromium missing at $CHROMIUM; run as root or install it: apt-get install -y chromium" >&2
    exit 1
  fi
fi
echo "installing chromium with apt-get"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
if [ ! -x "$CHROMIUM" ]; then
  echo "apt-get installed chromium, but $CHROMIUM is still missing" >&2
  exit 1
fi
echo "chromium: $("$CHROMIUM" --version)"
