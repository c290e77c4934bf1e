#!/bin/bash
# Perf smoke tests (registered in tests/mp/CMakeLists.txt). Modes:
#
#   perf_smoke.sh run KFRUN NP PERF_BINARY [args...]
#       runs the binary under kfrun -np NP; fails on a non-zero exit, a missing
#       "# Out of bounds values : 0 OK" footer or any #wrong other than 0
#       (or N/A, for sendrecv's unchecked in-place block).
#   perf_smoke.sh json KFRUN PERF_BINARY
#       -J FILE: the file must parse as JSON with the documented keys and
#       one result per table row (python3 if present, else a grep check).
#   perf_smoke.sh gate KFRUN PERF_BINARY
#       KF_PERF_MIN_BW=1e9 must fail (non-zero exit, FAILED message);
#       KF_PERF_MIN_BW=0 must pass; a malformed value must be rejected.
#   perf_smoke.sh mpirun MPIRUN PERF_BINARY
#       the binary under OpenMPI's mpirun -np 2 (as "run" checks it).
set -u
mode=$1
shift
out=$(mktemp)
json=$(mktemp)
trap 'rm -f "$out" "$json"' EXIT
tiny=(-b 8 -e 64K -f 8 -n 2 -w 1)

# check_output RC: the table and footer checks on $out.
check_output() {
  local rc=$1 fail=0 rows bad
  [ "$rc" -eq 0 ] || { echo "FAIL: exit code $rc"; fail=1; }
  grep -q '# Out of bounds values : 0 OK' "$out" || {
    echo "FAIL: no '# Out of bounds values : 0 OK' line"
    fail=1
  }
  grep -q '# Avg bus bandwidth    : ' "$out" || { echo "FAIL: no average bus bandwidth line"; fail=1; }
  # Data rows: the #wrong columns are fields 9 and 13 after the [rank] prefix is removed.
  rows=$(sed -e 's/^\[[0-9]*\] *//' "$out" | awk '$1 ~ /^[0-9]+$/ && NF == 13')
  [ -n "$rows" ] || { echo "FAIL: no result rows"; fail=1; }
  bad=$(echo "$rows" | awk '$9 != "0" || ($13 != "0" && $13 != "N/A")')
  [ -z "$bad" ] || { echo "FAIL: rows with wrong elements:"; echo "$bad"; fail=1; }
  return $fail
}

finish() {
  echo "perf smoke ($mode): $([ "$1" -eq 0 ] && echo PASSED || echo FAILED)"
  exit "$1"
}

case $mode in
  run)
    kfrun=$1 np=$2
    shift 2
    "$kfrun" -np "$np" --timeout 60 -x KF_TIMEOUT_MS=30000 "$@" >"$out" 2>&1
    rc=$?
    cat "$out"
    check_output $rc
    finish $?
    ;;
  json)
    kfrun=$1 bin=$2
    "$kfrun" -np 2 --timeout 60 -x KF_TIMEOUT_MS=30000 "$bin" "${tiny[@]}" -d all -J "$json" >"$out" 2>&1
    rc=$?
    cat "$out"
    fail=0
    check_output $rc || fail=1
    nrows=$(sed -e 's/^\[[0-9]*\] *//' "$out" | awk '$1 ~ /^[0-9]+$/ && NF == 13' | wc -l)
    echo "--- JSON ($nrows table rows):"
    cat "$json"
    if [ -x /usr/bin/python3 ]; then
      /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
for k in ("tool", "collective", "nranks", "config", "results", "out_of_bounds",
          "avg_busbw_GBps", "passed", "completed"):
    assert k in d, "missing key " + k
assert d["nranks"] == 2 and d["passed"] is True and d["completed"] is True
assert d["out_of_bounds"] == 0
assert len(d["results"]) == n, "%d results, %d table rows" % (len(d["results"]), n)
for r in d["results"]:
    for b in ("out_of_place", "in_place"):
        for k in ("time_us", "algbw_GBps", "busbw_GBps", "wrong"):
            assert k in r[b], "missing " + b + "." + k
    assert r["out_of_place"]["wrong"] == 0
print("JSON OK:", len(d["results"]), "results, avg busbw", d["avg_busbw_GBps"])
' "$json" "$nrows" || { echo "FAIL: JSON check"; fail=1; }
    else
      for k in '"results"' '"out_of_place"' '"in_place"' '"avg_busbw_GBps"' '"passed": true'; do
        grep -q "$k" "$json" || { echo "FAIL: JSON lacks $k"; fail=1; }
      done
    fi
    finish $fail
    ;;
  gate)
    kfrun=$1 bin=$2
    fail=0
    "$kfrun" -np 2 --timeout 60 -x KF_TIMEOUT_MS=30000 -x KF_PERF_MIN_BW=1e9 "$bin" "${tiny[@]}" >"$out" 2>&1
    rc=$?
    cat "$out"
    [ "$rc" -ne 0 ] || { echo "FAIL: KF_PERF_MIN_BW=1e9 did not fail the run"; fail=1; }
    grep -q '# Avg bus bandwidth    : .* FAILED' "$out" || { echo "FAIL: no FAILED on the average line"; fail=1; }
    grep -q 'FAILED: KF_PERF_MIN_BW=' "$out" || { echo "FAIL: no gate message"; fail=1; }
    grep -q '# Out of bounds values : 0 OK' "$out" || { echo "FAIL: the data were wrong too"; fail=1; }
    "$kfrun" -np 2 --timeout 60 -x KF_TIMEOUT_MS=30000 -x KF_PERF_MIN_BW=0 "$bin" "${tiny[@]}" >"$out" 2>&1
    rc=$?
    cat "$out"
    [ "$rc" -eq 0 ] || { echo "FAIL: KF_PERF_MIN_BW=0 failed (exit $rc)"; fail=1; }
    grep -q '# Avg bus bandwidth    : .* OK' "$out" || { echo "FAIL: no OK on the average line"; fail=1; }
    KF_PERF_MIN_BW=fast "$bin" -b 8 -e 8 >"$out" 2>&1
    rc=$?
    cat "$out"
    [ "$rc" -eq 2 ] || { echo "FAIL: KF_PERF_MIN_BW=fast gave exit $rc, not 2"; fail=1; }
    finish $fail
    ;;
  mpirun)
    mpirun=$1 bin=$2
    timeout -k 5 60 "$mpirun" --allow-run-as-root --oversubscribe --mca plm isolated \
      --mca btl self,tcp -np 2 -x KF_TIMEOUT_MS=30000 "$bin" "${tiny[@]}" -d all >"$out" 2>&1
    rc=$?
    cat "$out"
    check_output $rc
    finish $?
    ;;
  *)
    echo "usage: perf_smoke.sh run|json|gate|mpirun ..." >&2
    exit 2
    ;;
esac
