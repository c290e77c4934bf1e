#!/usr/bin/env bash
# smoke_test.sh BUILD_DIR OUT_DIR: runs compare.sh at tiny sizes (8 B..64 KiB,
# 2 iterations) and checks its outputs. Exit 77 (ctest: skipped) when
# compare.sh reports OpenMPI, Gloo or gnuplot missing.
set -euo pipefail
build=${1:?usage: smoke_test.sh BUILD_DIR OUT_DIR}
out=${2:?usage: smoke_test.sh BUILD_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)

rm -rf "$out"
rc=0
"$here/compare.sh" -b 8 -e 64K -f 4 -n 2 -w 1 -r 2 -t 60 -o "$out" "$build" || rc=$?
if [ "$rc" -eq 77 ]; then
  echo "perf_compare_smoke: SKIPPED: OpenMPI (openmpi-bin, libopenmpi-dev), Gloo (libgloo-dev)" \
       "or gnuplot (gnuplot-nox) is not installed"
  exit 77
fi
[ "$rc" -eq 0 ] || { echo "perf_compare_smoke: compare.sh failed (exit $rc)" >&2; exit 1; }

fail() { echo "perf_compare_smoke: FAILED: $*" >&2; exit 1; }
for f in table.txt results.csv summary.csv targets.csv memcpy.csv busbw.png; do
  [ -s "$out/$f" ] || fail "missing or empty $out/$f"
done
# The PNG signature.
[ "$(head -c 8 "$out/busbw.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] ||
  fail "$out/busbw.png is not a PNG"
# Every implementation at every size (8, 32, ..., 32768, then 65536: 8 sizes).
for impl in kungfu kungfu-tcp openmpi gloo; do
  n=$(grep -c "^$impl,2," "$out/results.csv" || true)
  [ "$n" -eq 8 ] || fail "$impl has $n result rows, expected 8"
done
grep -q '^ *64 KiB ' "$out/table.txt" || fail "no 64 KiB row in the table"
grep -q 'latency at 8 B' "$out/table.txt" || fail "no latency line in the table"
grep -q 'of memcpy' "$out/table.txt" || fail "no memcpy line in the table"
[ "$(grep -cE '^  T[1-6] ' "$out/table.txt")" -eq 6 ] || fail "the table does not evaluate 6 targets"
grep -q '^all results validated' "$out/table.txt" || fail "results not validated"
echo "perf_compare_smoke: OK ($out)"
