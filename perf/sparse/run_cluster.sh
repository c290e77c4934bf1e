#!/usr/bin/env bash
# run_cluster.sh BUILD_DIR [sparse_bench options]: sparse_bench on the
# emulated cluster of tests/cluster (2 hosts x 2 ranks, 1 Gbit/s links; root
# needed, see tests/cluster/README.md). Example, the table of perf/README.md:
#   perf/sparse/run_cluster.sh build --sizes 25.6M --densities 0.01,0.001 --iters 3
#   perf/sparse/run_cluster.sh build --sizes 138M --densities 0.01,0.001 --iters 1 --warmup 0
# RATE (default 1gbit) and HOSTS/RANKS (default 2/2) change the cluster.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run_cluster.sh BUILD_DIR [sparse_bench options]}
shift
exec "$here/../../tests/cluster/cluster.sh" run --kfrun "$build/tools/kfrun" --rate "${RATE:-1gbit}" \
  --kfrun-arg=--timeout --kfrun-arg=3000 ${KF_LOG_LEVEL:+--kfrun-arg=-x --kfrun-arg=KF_LOG_LEVEL=$KF_LOG_LEVEL} --kfrun-arg=-x --kfrun-arg=KF_TIMEOUT_MS=900000 \
  "${HOSTS:-2}" "${RANKS:-2}" -- "$build/perf/sparse_bench" "$@"
