#!/usr/bin/env bash
# Installs the Debian 12 packages that building and testing libkungfu needs, only those that
# are missing. Runs `apt-get update` at most once, and only when something is missing.
# Works as root, or through sudo when it is available.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libcmocka-dev libgtest-dev libbenchmark-dev
  openmpi-bin libopenmpi-dev libhwloc-dev
  libgloo-dev gnuplot-nox gdb
  iproute2 procps python3 util-linux coreutils
  openssh-client openssh-server
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
# openssh-server is for the ssh launch test (tests/cluster), which starts its
# own sshd: no ssh service is started by the install (a policy-rc.d that
# denies it, only for the install and only when there is none already).
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  "${as_root[@]}" sh -c "printf '#!/bin/sh\\nexit 101\\n' > $policy && chmod 755 $policy"
  trap '"${as_root[@]}" rm -f "$policy"' EXIT
fi
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
