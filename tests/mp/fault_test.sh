#!/bin/bash
# Driver of the fault test: runs `fault` under kfrun -np 4, then checks that
# the three survivors each printed a PASS line, that the job ended in time and
# that no process of this run is left behind.
# usage: fault_test.sh KFRUN FAULT_BINARY [kill|stop|idle]
set -u
kfrun=$1
prog=$2
mode=${3:-kill}
np=4
bound=45   # seconds for the whole job (kill at 1.5 s + 10 s timeout + teardown)
tag="kf_fault_$$_$RANDOM"   # marks our processes for the leftover check
out=$(mktemp)
trap 'rm -f "$out"' EXIT

start=$(date +%s.%N)
"$kfrun" -np $np --timeout 90 -x KF_TIMEOUT_MS=10000 \
  "$prog" "$tag" "$mode" >"$out" 2>&1
rc=$?
end=$(date +%s.%N)
elapsed=$(echo "$end - $start" | bc)
cat "$out"
echo "---- kfrun exit code $rc, elapsed ${elapsed}s"

fail=0
pass_lines=$(grep -c 'PASS fault rank' "$out")
for r in 0 1 3; do
  if ! grep -q "PASS fault rank $r:" "$out"; then
    echo "FAIL: survivor rank $r printed no PASS line"
    fail=1
  fi
done
if ! grep -qE 'worker (died of SIGKILL|stopped by SIGSTOP) as planned' "$out"; then
  echo "FAIL: rank 2 was not killed/stopped as planned"
  fail=1
fi
if [ "$rc" -ne 0 ]; then
  echo "FAIL: kfrun exit code $rc (expected 0: survivors pass, rank 2's parent exits 0)"
  fail=1
fi
if [ "$(echo "$elapsed > $bound" | bc)" -eq 1 ]; then
  echo "FAIL: job took ${elapsed}s, bound ${bound}s"
  fail=1
fi
sleep 0.5
left=$(pgrep -f "$tag" || true)
if [ -n "$left" ]; then
  echo "FAIL: processes left behind: $left"
  ps -o pid,ppid,stat,etime,args -p $(echo $left | tr ' ' ',') || true
  kill -KILL $left 2>/dev/null || true
  fail=1
fi
echo "fault test: $pass_lines of 3 survivors passed; $([ $fail -eq 0 ] && echo PASSED || echo FAILED)"
exit $fail
