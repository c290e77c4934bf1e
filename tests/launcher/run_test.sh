#!/usr/bin/env bash
# Launcher tests: run_test.sh TEST KFRUN CHILD
# Each TEST is one scenario of kfrun's contract (environment, output, exit
# codes, signals, timeout, clean-up) and finishes within a few seconds.
set -euo pipefail

test_name=$1
KFRUN=$2
CHILD=$3

# A unique word in every rank's argv, to find leftover processes with pgrep.
marker="kfrun_test_${test_name}_$$_${RANDOM}${RANDOM}"
work=$(mktemp -d)
bg_pid=""
cleanup() {
  if [[ -n $bg_pid ]]; then kill -KILL "$bg_pid" 2>/dev/null || true; fi
  pkill -KILL -f "$marker" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL [$test_name]: $*" >&2
  for f in "$work"/out "$work"/err; do
    if [[ -f $f ]]; then echo "--- $f:" >&2; cat "$f" >&2; fi
  done
  exit 1
}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# Runs kfrun in the foreground; sets rc and elapsed_ms, output in $work/out, $work/err.
run_kfrun() {
  local start
  start=$(now_ms)
  rc=0
  "$KFRUN" "$@" >"$work/out" 2>"$work/err" </dev/null || rc=$?
  elapsed_ms=$(( $(now_ms) - start ))
}

# Starts kfrun in the background (pid in bg_pid) and waits until it has $1 ranks.
start_kfrun_bg() {
  local np=$1
  shift
  "$KFRUN" "$@" >"$work/out" 2>"$work/err" </dev/null &
  bg_pid=$!
  local i
  for i in $(seq 100); do
    if [[ $(pgrep -P "$bg_pid" | wc -l) -ge $np ]]; then return 0; fi
    sleep 0.05
  done
  fail "kfrun did not start $np ranks"
}

# Waits for the background kfrun; sets rc and elapsed_ms (since the call).
wait_kfrun_bg() {
  local start
  start=$(now_ms)
  rc=0
  wait "$bg_pid" || rc=$?
  elapsed_ms=$(( $(now_ms) - start ))
  bg_pid=""
}

expect_rc() { [[ $rc -eq $1 ]] || fail "exit code $rc, expected $1"; }
expect_faster() { [[ $elapsed_ms -lt $1 ]] || fail "took ${elapsed_ms} ms, expected < $1 ms"; }
expect_grep() { grep -Eq -- "$1" "$2" || fail "no line matching '$1' in $2"; }

# No process of this test may remain (ranks or what they started).
expect_no_leftovers() {
  local i
  for i in $(seq 40); do
    if ! pgrep -f "$marker" >/dev/null; then return 0; fi
    sleep 0.05
  done
  ps -o pid,ppid,pgid,stat,args -p "$(pgrep -d, -f "$marker")" >&2 || true
  fail "processes left behind"
}

case $test_name in
  env)
    export KF_TEST_VAR=from_parent
    np=4
    run_kfrun -np $np -x KF_TEST_VAR "$CHILD" "$marker" env
    expect_rc 0
    for r in $(seq 0 $((np - 1))); do
      for line in "KF_RANK=$r" "KF_SIZE=$np" "KF_LOCAL_RANK=$r" "KF_LOCAL_SIZE=$np" "KF_TEST_VAR=from_parent"; do
        [[ $(grep -cx "\[$r\] $line" "$work/out") -eq 1 ]] || fail "rank $r: expected exactly one '$line'"
      done
    done
    [[ $(grep -c 'KF_RANK=' "$work/out") -eq $np ]] || fail "expected $np KF_RANK lines"
    [[ $(sed -n 's/^\[[0-9]*\] KF_ROOT_ADDR=//p' "$work/out" | sort -u | wc -l) -eq 1 ]] || fail "ranks disagree on KF_ROOT_ADDR"
    [[ $(sed -n 's/^\[[0-9]*\] KF_JOB_SECRET=//p' "$work/out" | sort -u | wc -l) -eq 1 ]] || fail "ranks disagree on KF_JOB_SECRET"
    expect_grep '^\[0\] KF_ROOT_ADDR=127\.0\.0\.1:[1-9][0-9]*$' "$work/out"
    expect_grep '^\[0\] KF_JOB_SECRET=[0-9a-f]{32}$' "$work/out"
    # -x VAR=VALUE overrides; a second job gets another secret.
    secret1=$(sed -n 's/^\[0\] KF_JOB_SECRET=//p' "$work/out")
    run_kfrun -np 1 -x KF_TEST_VAR=given "$CHILD" "$marker" env
    expect_rc 0
    expect_grep '^\[0\] KF_TEST_VAR=given$' "$work/out"
    secret2=$(sed -n 's/^\[0\] KF_JOB_SECRET=//p' "$work/out")
    [[ $secret1 != "$secret2" ]] || fail "two jobs got the same secret"
    ;;

  output)
    np=3
    run_kfrun -np $np "$CHILD" "$marker" lines 50
    expect_rc 0
    for r in $(seq 0 $((np - 1))); do
      [[ $(grep -c "^\[$r\] line [0-9]* of rank $r\$" "$work/out") -eq 50 ]] || fail "rank $r: expected 50 prefixed lines"
      expect_grep "^\[$r\] tail of rank $r\$" "$work/out"
      expect_grep "^\[$r\] error line of rank $r\$" "$work/err"
    done
    ! grep -q 'line 0 of' "$work/err" || fail "stdout lines on stderr"
    [[ $(wc -l <"$work/out") -eq $((np * 51)) ]] || fail "unexpected stdout line count"
    # Lines written in pieces by several ranks at once are never mixed.
    run_kfrun -np $np "$CHILD" "$marker" slow-partial 20
    expect_rc 0
    [[ $(wc -l <"$work/out") -eq $((np * 20)) ]] || fail "slow-partial: unexpected line count"
    if grep -Evq '^\[([0-9])\] first-half-\1-second-half-\1$' "$work/out"; then fail "mixed lines"; fi
    # -q: output passes through unchanged.
    run_kfrun -q -np 1 "$CHILD" "$marker" lines 2
    expect_rc 0
    [[ $(cat "$work/out") == $'line 0 of rank 0\nline 1 of rank 0\ntail of rank 0' ]] || fail "-q changed the output"
    expect_grep '^error line of rank 0$' "$work/err"
    ;;

  exit_code)
    run_kfrun -np 4 "$CHILD" "$marker" exit-rank 2 3
    expect_rc 3
    expect_faster 2500
    expect_grep '^kfrun: rank 2 exited with code 3' "$work/err"
    expect_no_leftovers
    run_kfrun -np 2 "$CHILD" "$marker" segv-rank 1
    expect_rc 139
    expect_grep '^kfrun: rank 1 was killed by SIGSEGV' "$work/err"
    expect_faster 2500
    expect_no_leftovers
    ;;

  sigterm)
    start_kfrun_bg 3 -np 3 "$CHILD" "$marker" sleep
    kill -TERM "$bg_pid"
    wait_kfrun_bg
    expect_rc 143
    expect_faster 2500
    expect_grep 'received SIGTERM' "$work/err"
    expect_no_leftovers
    start_kfrun_bg 2 -np 2 "$CHILD" "$marker" sleep
    kill -HUP "$bg_pid"
    wait_kfrun_bg
    expect_rc 129
    expect_no_leftovers
    ;;

  sigint)
    # A background job of a script starts with SIGINT ignored (kfrun then
    # leaves it ignored); env --default-signal gives it back its default.
    env --default-signal=INT true 2>/dev/null || { echo "env --default-signal unsupported; skipped"; exit 0; }
    env --default-signal=INT "$KFRUN" -np 2 "$CHILD" "$marker" sleep >"$work/out" 2>"$work/err" </dev/null &
    bg_pid=$!
    for _ in $(seq 100); do [[ $(pgrep -f "$marker sleep" | wc -l) -ge 3 ]] && break; sleep 0.05; done
    kill -INT "$bg_pid"
    wait_kfrun_bg
    expect_rc 130
    expect_grep 'received SIGINT' "$work/err"
    expect_no_leftovers
    ;;

  escalation)
    # Ranks that ignore SIGTERM are SIGKILLed after the grace period (3 s).
    start_kfrun_bg 2 -np 2 "$CHILD" "$marker" ignore-term
    for _ in $(seq 100); do [[ $(grep -c 'ignoring SIGTERM' "$work/out") -ge 2 ]] && break; sleep 0.05; done
    kill -TERM "$bg_pid"
    wait_kfrun_bg
    expect_rc 143
    [[ $elapsed_ms -ge 2500 ]] || fail "SIGKILL came after ${elapsed_ms} ms, before the grace period"
    expect_faster 6000
    expect_grep 'sending SIGKILL' "$work/err"
    expect_no_leftovers
    ;;

  timeout)
    run_kfrun --timeout 1 -np 3 "$CHILD" "$marker" sleep
    expect_rc 124
    [[ $elapsed_ms -ge 900 ]] || fail "timeout fired after ${elapsed_ms} ms"
    expect_faster 3000
    expect_grep '^kfrun: timeout' "$work/err"
    expect_no_leftovers
    # A job that ends in time is not affected.
    run_kfrun --timeout 10 -np 2 "$CHILD" "$marker" lines 1
    expect_rc 0
    expect_faster 2000
    ;;

  usage)
    run_kfrun -np 2 "kfrun_no_such_program_$marker"
    expect_rc 127
    expect_grep 'command not found' "$work/err"
    run_kfrun -np 2 "/nonexistent/$marker"
    expect_rc 127
    expect_grep 'No such file or directory' "$work/err"
    touch "$work/not_executable"
    chmod -x "$work/not_executable"
    run_kfrun -np 2 "$work/not_executable"
    expect_rc 126
    run_kfrun "$CHILD" "$marker" env
    expect_rc 2
    expect_grep 'missing -np' "$work/err"
    run_kfrun -np four "$CHILD" "$marker" env
    expect_rc 2
    expect_grep 'number of ranks' "$work/err"
    run_kfrun -np 0 "$CHILD" "$marker" env
    expect_rc 2
    run_kfrun -np 2
    expect_rc 2
    expect_grep 'missing the program' "$work/err"
    run_kfrun -np 2 --timeout soon "$CHILD" "$marker" env
    expect_rc 2
    run_kfrun -np 2 --bogus "$CHILD" "$marker" env
    expect_rc 2
    expect_grep 'unknown option --bogus' "$work/err"
    run_kfrun -x "$CHILD"
    expect_rc 2
    run_kfrun --help
    expect_rc 0
    expect_grep '^usage: kfrun' "$work/out"
    # "--" ends the options: the program may start with a dash-free name
    # and its own options are not kfrun's.
    run_kfrun -np 1 -- "$CHILD" "$marker" env
    expect_rc 0
    ;;

  cleanup)
    # What a rank started goes with it (each rank has its own process group).
    start_kfrun_bg 2 -np 2 "$CHILD" "$marker" grandchild
    for _ in $(seq 100); do [[ $(grep -c 'started grandchild' "$work/out") -ge 2 ]] && break; sleep 0.05; done
    kill -TERM "$bg_pid"
    wait_kfrun_bg
    expect_rc 143
    expect_no_leftovers
    # A rank that finished early is reaped at once: no <defunct> ranks.
    start_kfrun_bg 2 -np 3 "$CHILD" "$marker" exit-rank-ok 0
    for _ in $(seq 40); do [[ $(pgrep -P "$bg_pid" | wc -l) -eq 2 ]] && break; sleep 0.05; done
    [[ $(pgrep -P "$bg_pid" | wc -l) -eq 2 ]] || fail "expected 2 live ranks"
    if ps -o stat= --ppid "$bg_pid" | grep -q Z; then fail "zombie rank"; fi
    kill -TERM "$bg_pid"
    wait_kfrun_bg
    expect_rc 143
    expect_no_leftovers
    # Ranks die with kfrun even when kfrun is SIGKILLed (PR_SET_PDEATHSIG).
    start_kfrun_bg 3 -np 3 "$CHILD" "$marker" sleep
    kill -KILL "$bg_pid"
    wait_kfrun_bg || true
    expect_no_leftovers
    ;;

  *)
    echo "unknown test $test_name" >&2
    exit 2
    ;;
esac
echo "PASS [$test_name]"
