#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing libkungfu needs, only those that
# are missing. Runs `apt-get update` at most once, and only when something is missing.
# Works as root, or through sudo when it is available.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libcmocka-dev libgtest-dev libbenchmark-dev
  openmpi-bin libopenmpi-dev libhwloc-dev
  libgloo-dev gnuplot-nox
  iproute2 procps python3 util-linux coreutils
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#packages[@]} packages are installed"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "deps: missing ${missing[*]}; run as root or install sudo" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
