#!/usr/bin/env bash
# The browser test drives Debian's Chromium at /usr/bin/chromium (CHROMIUM overrides the path)
# and shows the dock in Chinese, which needs CJK glyphs (Debian's fonts-noto-cjk).
# Install what is missing; CI runs as root, elsewhere sudo is used when available.
set -euo pipefail
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
missing=()
[ -x "$CHROMIUM" ] || missing+=(chromium)
# The package's own file list is the check: no fontconfig tooling is assumed.
[ -e /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc ] || missing+=(fonts-noto-cjk)
if [ "${#missing[@]}" -eq 0 ]; then
  echo "chromium: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM"); fonts-noto-cjk present"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing: ${missing[*]} and apt-get is unavailable; install Chromium (set CHROMIUM=<path>) and a CJK font" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "missing: ${missing[*]}; run as root or install them: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi
echo "installing ${missing[*]} with apt-get"
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
if [ ! -x "$CHROMIUM" ]; then
  echo "apt-get installed chromium, but $CHROMIUM is still missing" >&2
  exit 1
fi
echo "chromium: $("$CHROMIUM" --version)"
