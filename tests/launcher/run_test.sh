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

  hosts)
    # -H with only this host's names: every rank local, one KF_LOCAL_* numbering.
    run_kfrun -H localhost:2,127.0.0.1:2 "$CHILD" "$marker" env
    expect_rc 0
    for r in 0 1 2 3; do
      for line in "KF_RANK=$r" "KF_SIZE=4" "KF_LOCAL_RANK=$r" "KF_LOCAL_SIZE=4"; do
        [[ $(grep -cx "\[$r\] $line" "$work/out") -eq 1 ]] || fail "rank $r: expected exactly one '$line'"
      done
    done
    expect_grep '^\[0\] KF_ROOT_ADDR=127\.0\.0\.1:[1-9][0-9]*$' "$work/out"
    # This host's own name counts as local; -np below the slots fills in order.
    run_kfrun -np 3 -H "$(hostname):5" "$CHILD" "$marker" env
    expect_rc 0
    expect_grep '^\[2\] KF_LOCAL_SIZE=3$' "$work/out"
    [[ $(grep -c 'KF_RANK=' "$work/out") -eq 3 ]] || fail "expected 3 ranks"
    # Repeated hosts merge; "host" alone is one slot; --hosts= and --host work too.
    run_kfrun --hosts=localhost,localhost --host 127.0.0.1 "$CHILD" "$marker" env
    expect_rc 0
    [[ $(grep -c 'KF_RANK=' "$work/out") -eq 3 ]] || fail "expected 3 ranks from 3 slots"
    # Errors: more ranks than slots, malformed lists.
    run_kfrun -np 5 -H localhost:2,127.0.0.1:2 "$CHILD" "$marker" env
    expect_rc 2
    expect_grep 'more than the 4 slots' "$work/err"
    for bad in "localhost:0" "localhost:x" "localhost:" "a,,b" "" "host name" "a:1:2"; do
      run_kfrun -H "$bad" "$CHILD" "$marker" env
      expect_rc 2
      expect_grep '^kfrun: -H ' "$work/err"
    done
    ;;

  hostfile)
    cat >"$work/hostfile" <<'HOSTS'
# a comment line
localhost slots=2   # two ranks here
127.0.0.1 slots=1 max_slots=8

localhost
HOSTS
    run_kfrun --hostfile "$work/hostfile" "$CHILD" "$marker" env
    expect_rc 0
    [[ $(grep -c 'KF_RANK=' "$work/out") -eq 4 ]] || fail "expected 4 ranks (3 + 1 slots)"
    expect_grep '^\[3\] KF_LOCAL_RANK=3$' "$work/out"
    expect_grep '^\[3\] KF_LOCAL_SIZE=4$' "$work/out"
    printf 'localhost slots=two\n' >"$work/bad1"
    run_kfrun --hostfile "$work/bad1" "$CHILD" "$marker" env
    expect_rc 2
    expect_grep 'line 1: .slots=two' "$work/err"
    printf 'localhost cpus=2\n' >"$work/bad2"
    run_kfrun --hostfile "$work/bad2" "$CHILD" "$marker" env
    expect_rc 2
    expect_grep "line 1: unexpected 'cpus=2'" "$work/err"
    printf '# nothing\n' >"$work/empty"
    run_kfrun --hostfile "$work/empty" "$CHILD" "$marker" env
    expect_rc 2
    expect_grep 'no hosts' "$work/err"
    run_kfrun --hostfile "$work/nonexistent" "$CHILD" "$marker" env
    expect_rc 2
    expect_grep 'cannot open' "$work/err"
    ;;

  rsh)
    # A fake remote-exec command: runs the rank here, with the host in an
    # environment variable. Addresses of the test subnet are never contacted
    # (kfrun only resolves numeric addresses and asks the routing table).
    h1=10.213.251.1 h2=10.213.251.2
    export KF_TEST_VAR="it's a \"test\" \$HOME; \`x\`"
    # This one also keeps the command line in KFT_CMDLINE ($1 of its shell).
    run_kfrun -H "$h1:2,$h2:1,localhost:1" \
      --rsh "env KFT_REMOTE={host} KFT_ARGS='a b' sh -c 'KFT_CMDLINE=\$1; export KFT_CMDLINE; eval \"\$1\"' fake-rsh" \
      -x KF_TEST_VAR "$CHILD" "$marker" env-remote
    expect_rc 0
    # Ranks 0, 1 on h1; 2 on h2; 3 local (started directly).
    for r in 0 1; do expect_grep "^\\[$r\\] KFT_REMOTE=$h1\$" "$work/out"; done
    expect_grep "^\\[2\\] KFT_REMOTE=$h2\$" "$work/out"
    expect_grep '^\[3\] KFT_REMOTE=\(unset\)$' "$work/out"
    expect_grep '^\[1\] KFT_ARGS=a b$' "$work/out"
    for r in 0 1 2 3; do
      expect_grep "^\\[$r\\] KF_RANK=$r\$" "$work/out"
      expect_grep "^\\[$r\\] KF_SIZE=4\$" "$work/out"
      expect_grep "^\\[$r\\] KF_TEST_VAR=it's a \"test\" \\\$HOME; \`x\`\$" "$work/out"
      expect_grep "^\\[$r\\] cwd=$(pwd)\$" "$work/out"
    done
    for rl in 0:0:2 1:1:2 2:0:1 3:0:1; do
      IFS=: read -r r lr ls <<<"$rl"
      expect_grep "^\\[$r\\] KF_LOCAL_RANK=$lr\$" "$work/out"
      expect_grep "^\\[$r\\] KF_LOCAL_SIZE=$ls\$" "$work/out"
    done
    [[ $(sed -n 's/^\[[0-9]*\] KF_ROOT_ADDR=//p' "$work/out" | sort -u | wc -l) -eq 1 ]] || fail "ranks disagree on KF_ROOT_ADDR"
    [[ $(sed -n 's/^\[[0-9]*\] KF_JOB_SECRET=//p' "$work/out" | sort -u | wc -l) -eq 1 ]] || fail "ranks disagree on KF_JOB_SECRET"
    # Rank 0 remote: KF_ROOT_ADDR is its (numeric) address, random port in 20000..32767.
    expect_grep "^\\[3\\] KF_ROOT_ADDR=10\\.213\\.251\\.1:(2[0-9]{4}|3[0-2][0-9]{3})\$" "$work/out"
    # The remote command line: the directory and the rank's variables on it,
    # quoted, after a script that watches the rank's stdin (it closes with
    # the connection).
    expect_grep "^\\[1\\] cmdline=exec sh -c '.*/dev/stdin.*' kf-rank [^ ]+ env 'KF_TEST_VAR=it" "$work/out"
    expect_grep '^\[1\] cmdline=.* KF_RANK=1 KF_SIZE=4 KF_LOCAL_RANK=1 KF_LOCAL_SIZE=2 KF_ROOT_ADDR=[0-9.:]+ KF_JOB_SECRET=[0-9a-f]{32} ' "$work/out"
    # A remote rank 0 given kfrun's stdin (a file here: not /dev/null) reads
    # it: exec env, unwatched.
    echo data >"$work/in"
    "$KFRUN" -H "$h1" --rsh "sh -c 'KFT_CMDLINE=\$1; export KFT_CMDLINE; eval \"\$1\"' fake-rsh" \
      "$CHILD" "$marker" env-remote <"$work/in" >"$work/out" 2>"$work/err" || fail "kfrun with stdin"
    expect_grep "^\\[0\\] cmdline=cd .* 2>/dev/null; exec env KF_RANK=0 " "$work/out"
    # Rank 0 local with remote hosts: the root is this host's address on the
    # route towards them, not loopback (only where such a route exists).
    if ip route get "$h1" >/dev/null 2>&1; then
      run_kfrun -H "localhost,$h1" --rsh "env KFT_REMOTE={host} sh -c" "$CHILD" "$marker" env-remote
      expect_rc 0
      root=$(sed -n 's/^\[1\] KF_ROOT_ADDR=//p' "$work/out")
      [[ $root =~ ^[0-9.]+:[1-9][0-9]*$ && $root != 127.* ]] || fail "root address '$root'"
    fi
    # KF_RSH is the default template; --rsh wins over it.
    KF_RSH="env KFT_REMOTE=via-env-{host} sh -c" run_kfrun -H "$h1" "$CHILD" "$marker" env-remote
    expect_rc 0
    expect_grep "^\\[0\\] KFT_REMOTE=via-env-$h1\$" "$work/out"
    KF_RSH="false" run_kfrun -H "$h1" --rsh "env KFT_REMOTE=opt sh -c" "$CHILD" "$marker" env-remote
    expect_rc 0
    expect_grep '^\[0\] KFT_REMOTE=opt$' "$work/out"
    # Exit codes, failure handling and clean-up through the remote-exec command.
    run_kfrun -H "$h1:2,$h2:2" --rsh "env KFT_REMOTE={host} sh -c" "$CHILD" "$marker" exit-rank 3 5
    expect_rc 5
    expect_grep '^kfrun: rank 3 exited with code 5' "$work/err"
    expect_faster 2500
    expect_no_leftovers
    start_kfrun_bg 2 -H "$h1,$h2" --rsh "env KFT_REMOTE={host} sh -c" "$CHILD" "$marker" sleep
    kill -TERM "$bg_pid"
    wait_kfrun_bg
    expect_rc 143
    expect_no_leftovers
    run_kfrun --timeout 1 -H "$h1,$h2" --rsh "env KFT_REMOTE={host} sh -c" "$CHILD" "$marker" sleep
    expect_rc 124
    expect_no_leftovers
    # A remote-exec program that does not exist; an unterminated quote.
    run_kfrun -H "$h1" --rsh "kfrun_no_such_rsh_$marker {host}" "$CHILD" "$marker" env
    expect_rc 127
    expect_grep 'remote-exec command: ' "$work/err"
    run_kfrun -H "$h1" --rsh "ssh 'x {host}" "$CHILD" "$marker" env
    expect_rc 2
    expect_grep 'unterminated quote' "$work/err"
    ;;

  rsh_detached)
    # A remote-exec client that, like ssh, runs the command in a session of
    # its own: stopping the client does not signal the rank, yet the rank
    # must end with it (through its stdin, which kfrun holds open).
    h1=10.213.251.1 h2=10.213.251.2
    fake="sh '$(cd "$(dirname "$0")" && pwd)/fake_ssh.sh' {host}"
    # Rank 0 fails; rank 1 sleeps until kfrun stops its client.
    run_kfrun -H "$h1,$h2" --rsh "$fake" "$CHILD" "$marker" exit-rank 0 3
    expect_rc 3
    expect_grep '^kfrun: rank 0 exited with code 3' "$work/err"
    expect_no_leftovers
    # The same with the roles swapped; and nothing lingers after a clean run.
    run_kfrun -H "$h1,$h2" --rsh "$fake" "$CHILD" "$marker" exit-rank 1 5
    expect_rc 5
    expect_grep '^kfrun: rank 1 exited with code 5' "$work/err"
    expect_no_leftovers
    run_kfrun -H "$h1,$h2" --rsh "$fake" "$CHILD" "$marker" env
    expect_rc 0
    expect_no_leftovers
    # A remote rank that ignores SIGTERM: its watcher sends SIGKILL 3 s later.
    run_kfrun --timeout 1 -H "$h1,$h2" --rsh "$fake" "$CHILD" "$marker" ignore-term
    expect_rc 124
    for i in $(seq 100); do
      pgrep -f -- "$marker" >/dev/null || break
      sleep 0.1
    done
    expect_no_leftovers
    # kfrun killed outright: its clients die with it, and the remote ranks
    # see their stdin close.
    start_kfrun_bg 3 -H "localhost,$h1,$h2" --rsh "$fake" "$CHILD" "$marker" sleep
    for i in $(seq 100); do
      [[ $(pgrep -c -f -- "^[^ ]*/kf_launcher_child $marker sleep\$" || true) -ge 3 ]] && break
      sleep 0.05
    done
    [[ $(pgrep -c -f -- "^[^ ]*/kf_launcher_child $marker sleep\$" || true) -ge 3 ]] || fail "the ranks did not start"
    kill -KILL "$bg_pid"
    wait "$bg_pid" 2>/dev/null || true
    bg_pid=""
    expect_no_leftovers
    ;;

  *)
    echo "unknown test $test_name" >&2
    exit 2
    ;;
esac
echo "PASS [$test_name]"
