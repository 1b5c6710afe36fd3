#!/usr/bin/env bash
# Installs the Debian packages etpack builds with and configures the build
# directory. Safe to run again: installs only what is missing, reconfigures
# only when needed. Usage: scripts/setup.sh [BUILD_DIR]   (default: build)
# SETUP_EXTRA_PACKAGES="pkg ..." installs those too (if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(flatbuffers-compiler libflatbuffers-dev libzstd-dev libxxhash-dev catch2
      libbenchmark-dev meson ninja-build pkg-config g++ python3 time clang-format)
read -r -a extra <<<"${SETUP_EXTRA_PACKAGES:-}"
pkgs+=("${extra[@]}")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  if ! log=$(DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
                 --no-install-recommends "${missing[@]}" 2>&1); then
    printf '%s\n' "$log" >&2
    echo "setup: installing ${missing[*]} failed (output above)" >&2
    exit 1
  fi
fi

build="${1:-build}"
if [ ! -f "$build/build.ninja" ]; then
  if ! log=$(meson setup "$build" --buildtype=debugoptimized 2>&1); then
    printf '%s\n' "$log" >&2
    echo "setup: configuring $build failed (output above)" >&2
    exit 1
  fi
fi
