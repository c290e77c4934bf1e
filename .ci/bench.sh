#!/usr/bin/env bash
# Installs what is missing, builds libkungfu and runs the main benchmark: a 4-rank all_reduce
# on this host from 8 B to 64 MiB. Usage: bash .ci/bench.sh [extra all_reduce_perf args]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bash "$here/deps.sh"
source "$here/common.sh"

kf_build build
cd "$KF_ROOT"
build/tools/kfrun -np 4 build/perf/all_reduce_perf -b 8 -e 64M -f 2 "$@"
