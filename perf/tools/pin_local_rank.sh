#!/bin/sh
# Runs a command on one core of this host, chosen by the rank's local rank:
# core KF_LOCAL_RANK modulo the cores this process may use (taskset's
# numbering: the Nth of them). Put it between kfrun and the program:
#
#   kfrun -np 2 perf/tools/pin_local_rank.sh build/perf/async_overhead -b 262144
#
# Every thread of a rank (its application thread, the transport's progress
# thread, the engine's workers) then shares that one core, and no rank's
# threads take another rank's core. A benchmark on a host with as many
# cores as ranks reads steadier this way: unpinned, the scheduler places
# the threads anew in every run, and runs of the same binary differ by more
# than the effects being measured (perf/README.md, session 25). It is a
# different regime, not a fairer one: a rank's threads compete for its core,
# so the figures measure CPU time per operation more than latency.
# Logical CPUs, in the order the kernel lists them (SMT siblings are not
# told apart); ranks beyond the CPUs share them round-robin; two jobs
# started at once both begin at the first CPU.
set -eu
if [ "$#" -eq 0 ]; then
  echo "usage: pin_local_rank.sh program [args...]   (under kfrun)" >&2
  exit 2
fi
rank=${KF_LOCAL_RANK:?pin_local_rank.sh: KF_LOCAL_RANK is not set (run it under kfrun)}
case "$rank" in
  ''|*[!0-9]*) echo "pin_local_rank.sh: KF_LOCAL_RANK is not a number: $rank" >&2; exit 2 ;;
esac
command -v taskset >/dev/null || { echo "pin_local_rank.sh: taskset not found (util-linux)" >&2; exit 2; }
# The CPUs this process may use (e.g. "0-3,6"), expanded one per line.
allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
cores=$(echo "$allowed" | tr ',' '\n' | awk -F- '{ if (NF == 2) { for (c = $1; c <= $2; c++) print c } else print $1 }')
n=$(echo "$cores" | wc -l)
core=$(echo "$cores" | sed -n "$((rank % n + 1))p")
if [ -z "$core" ]; then
  echo "pin_local_rank.sh: cannot read the allowed CPUs from /proc/self/status" >&2
  exit 2
fi
exec taskset -c "$core" "$@"
