#!/bin/bash
# Perf smoke test: runs a perf binary under kfrun and fails on a non-zero exit
# or on any non-zero #wrong. usage: perf_smoke.sh KFRUN NP PERF_BINARY [args...]
set -u
kfrun=$1; np=$2; shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$kfrun" -np "$np" --timeout 120 -x KF_TIMEOUT_MS=30000 "$@" >"$out" 2>&1
rc=$?
cat "$out"
fail=0
[ "$rc" -eq 0 ] || { echo "FAIL: exit code $rc"; fail=1; }
grep -q '# Out of bounds values : 0 OK' "$out" || { echo "FAIL: no '# Out of bounds values : 0 OK' line"; fail=1; }
# Data rows: the #wrong columns are fields 9 and 13 after the [rank] prefix is removed.
rows=$(sed -e 's/^\[[0-9]*\] *//' "$out" | awk '$1 ~ /^[0-9]+$/ && NF >= 13')
[ -n "$rows" ] || { echo "FAIL: no result rows"; fail=1; }
bad=$(echo "$rows" | awk '$9 != "0" || $13 != "0"')
[ -z "$bad" ] || { echo "FAIL: rows with wrong elements:"; echo "$bad"; fail=1; }
echo "perf smoke: $([ $fail -eq 0 ] && echo PASSED || echo FAILED)"
exit $fail
