#!/usr/bin/env bash
# cluster_sparse.sh CLUSTER_SH KFRUN SPARSE_MP: the sparse all_reduce tests
# (sparse_mp, or sparse_async_mp for the async form) on 2 emulated hosts x 2 ranks, where KF_SPARSE_AUTO picks the
# hierarchical algorithm and the exact hierarchical checks use two hosts.
# Exit 77 (ctest skip) when namespaces cannot be created here.
set -euo pipefail
CLUSTER=$1 KFRUN=$2 PROG=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rc=0
"$CLUSTER" run --kfrun "$KFRUN" --rate 1gbit --kfrun-arg=--timeout --kfrun-arg=150 \
  --kfrun-arg=-x --kfrun-arg=KF_TIMEOUT_MS=30000 --kfrun-arg=-x --kfrun-arg=KF_SPARSE_MIN_ELEMS=0 \
  2 2 -- "$PROG" >"$work/out" 2>"$work/err" </dev/null || rc=$?
if [[ $rc -eq 77 ]]; then cat "$work/err" >&2; exit 77; fi
cat "$work/out"
if [[ $rc -ne 0 ]]; then
  tail -n 40 "$work/err" >&2
  echo "FAIL: sparse_mp on 2 x 2 exited with $rc" >&2
  exit 1
fi
n=$(grep -c "sparse_mp OK (np 4)" "$work/out" || true)
[[ $n -eq 4 ]] || { echo "FAIL: $n of 4 ranks reported OK" >&2; exit 1; }
grep -q "hierarchical checked on 2 host(s) x 2" "$work/out" || { echo "FAIL: the ranks did not see 2 hosts x 2" >&2; exit 1; }
grep "link sent" "$work/err" || true
echo "PASS: sparse_mp on 2 x 2 emulated hosts"
