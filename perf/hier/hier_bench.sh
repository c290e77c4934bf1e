#!/usr/bin/env bash
# Hierarchical vs flat all_reduce on an emulated cluster (root only):
#   perf/hier/hier_bench.sh [BUILD_DIR] [-- hier_bench options]
# K x M ranks (default 2 x 2) in network namespaces joined by links of
# RATE (default 1gbit, tc tbf on both ends), one hier_bench run that switches
# strategy at run time and prints flat and hierarchical times side by side,
# the ratio, and the bytes/s each host's link carried at 64 MiB.
# Environment: K, M, RATE, DELAY (e.g. 100us; needs netem), and any KF_*
# knob to pass to the ranks via KF_BENCH_ENV="KF_HIER_SLICE_BYTES=... ...".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
shift || true
[[ ${1:-} == -- ]] && shift
K=${K:-2} M=${M:-2} RATE=${RATE:-1gbit}
args=(--kfrun "$build/tools/kfrun" --rate "$RATE" --kfrun-arg=--timeout --kfrun-arg=1200)
[[ -n ${DELAY:-} ]] && args+=(--delay "$DELAY")
for kv in ${KF_BENCH_ENV:-}; do args+=(--kfrun-arg=-x "--kfrun-arg=$kv"); done
echo "# $(date -u +%FT%TZ) $(uname -n): hier_bench.sh K=$K M=$M RATE=$RATE ${DELAY:+DELAY=$DELAY }${KF_BENCH_ENV:-} $*"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$root/tests/cluster/cluster.sh" run "${args[@]}" "$K" "$M" -- "$build/perf/hier/hier_bench" "$@"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
