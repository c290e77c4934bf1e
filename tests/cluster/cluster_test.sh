#!/usr/bin/env bash
# Emulated-cluster tests: cluster_test.sh TEST CLUSTER_SH KFRUN [PROG [ARGS]]
#   conformance PROG K M [ARGS]  PROG (mp_conformance --np K*M ARGS) on K hosts x M ranks
#   hosts PROG [KFTOPO]    ranks in different namespaces are different hosts
#                     (own hostname, KF_LOCAL_* per host, the library's
#                     topology (kftopo: host_count) and its data goes over
#                     the bridge rather than through shared memory); PROG
#                     is mp_conformance
#   mpirun PROG MPIRUN     PROG (mp_conformance --no-big) under OpenMPI's
#                     mpirun with a hostfile on 2 hosts x 2 ranks (KF_ROOT_ADDR
#                     given, the rest from mpirun's environment)
#   split PROG K M    PROG (split_mp) on K hosts x M ranks: split_host and
#                     split_cross have the right members, collectives exact
#   cleanup           nothing is left after SIGTERM and SIGKILL of cluster.sh
#   switch PROG K M   PROG (mp_strategy_switch) on K x M: every rank prints PASS
#   async PROG K M [ARGS]  PROG (mp_async_stress ARGS) on K x M: every rank
#                     prints PASS with 0 wrong elements
#   ssh PROG          kfrun over real ssh: an sshd (private config and keys,
#                     key-only root login) in host 2 of a 2-host cluster, kfrun
#                     in host 1 with --rsh "ssh ... {host}": PROG
#                     (mp_conformance --no-big) on 2 x 2; hostnames, KF_LOCAL_*,
#                     working directory and a -x value full of shell syntax
#                     arrive intact; a remote rank's exit code and --timeout
#                     end the job with every rank gone; a refused connection
#                     gives 255 at once. Skipped (77) without sshd.
# KF_CLUSTER_ENV="VAR=VALUE ..." in the test's environment is passed to the
# ranks (kfrun -x) in the conformance, switch and async tests (e.g. KF_STRATEGY).
# Exit 77 (ctest skip) when this machine cannot create namespaces.
set -euo pipefail

test_name=$1
CLUSTER=$2
KFRUN=$3
PROG=${4:-}
SKIP=77
work=$(mktemp -d)
bg_pid=""
# Kills the background job $bg_pid and its children, if any.
stop_bg() {
  if [[ -n $bg_pid ]]; then
    pkill -KILL -P "$bg_pid" 2>/dev/null || true
    kill -KILL "$bg_pid" 2>/dev/null || true
    bg_pid=""
  fi
}
cleanup() {
  stop_bg
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL [$test_name]: $*" >&2
  for f in "$work"/out "$work"/err; do
    if [[ -f $f ]]; then echo "--- $f:" >&2; tail -n 40 "$f" >&2; fi
  done
  if [[ -s $work/stacks ]]; then echo "--- stacks:" >&2; cat "$work/stacks" >&2; fi
  exit 1
}

# After $1 seconds, writes the stacks of every thread of every process named
# $2 to $work/stacks (with gdb, when installed): a job that outlives its
# per-operation timeouts leaves the evidence of where it stopped. Run in the
# background, before the job.
dump_stacks_after() {
  local pid
  sleep "$1"
  command -v gdb >/dev/null || { echo "(no gdb: no stacks)" >"$work/stacks"; return 0; }
  for pid in $(pgrep -x "${2:0:15}"); do
    echo "=== pid $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
    timeout 30 gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1 | grep -E '^(#|Thread)' || true
  done >"$work/stacks" 2>&1
}

# Runs cluster.sh run ...; rc, output in $work/out and $work/err. A skip
# ends the test as skipped, with cluster.sh's reason.
run_cluster() {
  rc=0
  "$CLUSTER" run --kfrun "$KFRUN" "$@" >"$work/out" 2>"$work/err" </dev/null || rc=$?
  if [[ $rc -eq $SKIP ]]; then
    cat "$work/err" >&2
    exit $SKIP
  fi
}

# kfrun -x arguments for KF_CLUSTER_ENV.
env_args=()
for kv in ${KF_CLUSTER_ENV:-}; do env_args+=(--kfrun-arg=-x "--kfrun-arg=$kv"); done

# The cluster ID from cluster.sh's banner.
cluster_id() { sed -n 's/^kft-cluster: cluster \([0-9a-f]*\):.*/\1/p' "$work/err" | head -n 1; }

# Nothing of cluster $1 remains: namespaces, links, processes.
expect_gone() {
  local id=$1 i
  for i in $(seq 50); do
    if ! ip netns list | grep -q "^kft-$id-" && ! ip -o link show | grep -q "kft-\(br-\)\{0,1\}$id" &&
       ! pgrep -f "kft-$id|nsexec $id" >/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  ip netns list >&2
  ip -o link show | grep "kft-" >&2 || true
  pgrep -af "kft-$id|nsexec $id" >&2 || true
  fail "cluster $id left something behind"
}

case $test_name in
  conformance)
    k=$5 m=$6
    start=$(date +%s)
    # A hung case fails within KF_TIMEOUT_MS; the job's limit is a backstop,
    # wide for slow shared machines (tests/cluster/README.md).
    dump_stacks_after 340 "$(basename "$PROG")" >/dev/null 2>&1 &
    bg_pid=$!
    run_cluster --kfrun-arg=--timeout --kfrun-arg=400 --kfrun-arg=-x --kfrun-arg=KF_TIMEOUT_MS=30000 \
      "${env_args[@]}" "$k" "$m" -- "$PROG" --np $((k * m)) "${@:7}"
    stop_bg
    [[ $rc -eq 0 ]] || fail "conformance on $k x $m exited with $rc"
    grep -Eq "^\[0\] [0-9]+ passed, 0 failed" "$work/out" || fail "no summary line from rank 0"
    cat "$work/err" >&2
    expect_gone "$(cluster_id)"
    echo "conformance on $k x $m hosts ${KF_CLUSTER_ENV:-}: $(grep -E '^\[0\] [0-9]+ passed' "$work/out") in $(( $(date +%s) - start )) s"
    ;;

  switch)
    k=$5 m=$6
    run_cluster --kfrun-arg=--timeout --kfrun-arg=100 --kfrun-arg=-x --kfrun-arg=KF_TIMEOUT_MS=30000 \
      "${env_args[@]}" "$k" "$m" -- "$PROG"
    [[ $rc -eq 0 ]] || fail "strategy switch on $k x $m exited with $rc"
    for r in $(seq 0 $((k * m - 1))); do
      grep -Eq "^\[$r\] PASS strategy_switch rank $r: [0-9]+ checks, 0 failed" "$work/out" ||
        fail "no PASS line from rank $r"
    done
    grep -E "^\[0\] (rank 0: mismatched|PASS)" "$work/out"
    cat "$work/err" >&2
    expect_gone "$(cluster_id)"
    ;;

  hosts)
    k=3 m=2
    run_cluster "$k" "$m" -- sh -c 'echo "host=$(hostname) rank=$KF_RANK local=$KF_LOCAL_RANK/$KF_LOCAL_SIZE root=$KF_ROOT_ADDR addr=$(ip -4 -o addr show dev eth0 | awk "{print \$4}")"'
    [[ $rc -eq 0 ]] || fail "exited with $rc"
    id=$(cluster_id)
    [[ -n $id ]] || fail "no cluster id"
    x=$(( 16#${id:0:4} % 250 + 1 ))
    for r in $(seq 0 $((k * m - 1))); do
      h=$(( r / m + 1 ))
      line="^\\[$r\\] host=kft-$id-h$h rank=$r local=$(( r % m ))/$m root=10\\.213\\.$x\\.1:[0-9]+ addr=10\\.213\\.$x\\.$h/24\$"
      grep -Eq "$line" "$work/out" || fail "rank $r: no line matching '$line'"
    done
    expect_gone "$id"
    # The library's own view (kf_comm_host_count, through kftopo).
    if [[ -n ${5:-} ]]; then
      run_cluster "$k" "$m" -- "$5" --json
      [[ $rc -eq 0 ]] || fail "kftopo exited with $rc"
      grep -q "^\[0\] {\"size\":$((k * m)),\"host_count\":$k," "$work/out" || fail "kftopo does not see $k hosts"
      echo "kftopo: $k hosts"
      expect_gone "$(cluster_id)"
    fi
    # The library sees different hosts: a 1 MiB all_reduce crosses each
    # host's link (same-host ranks would use shared memory, and the links
    # would carry only the few kB of the rendezvous).
    run_cluster 2 2 -- "$PROG" --np 4 --coll all_reduce --dtype float32
    [[ $rc -eq 0 ]] || fail "all_reduce on 2 x 2 exited with $rc"
    for h in 1 2; do
      sent=$(sed -n "s/^kft-cluster: host $h: link sent \([0-9]*\) bytes.*/\1/p" "$work/err")
      [[ -n $sent && $sent -gt 4000000 ]] || fail "host $h sent ${sent:-?} bytes over its link, expected > 4 MB"
      echo "host $h sent $sent bytes over the bridge"
    done
    expect_gone "$(cluster_id)"
    ;;

  mpirun)
    rc=0
    "$CLUSTER" mpirun --mpirun "$5" --mpirun-arg=-x --mpirun-arg=KF_TIMEOUT_MS=30000 \
      2 2 -- "$PROG" --np 4 --no-big >"$work/out" 2>"$work/err" </dev/null || rc=$?
    if [[ $rc -eq $SKIP ]]; then cat "$work/err" >&2; exit $SKIP; fi
    [[ $rc -eq 0 ]] || fail "mpirun on 2 x 2 exited with $rc"
    grep -Eq "^[0-9]+ passed, 0 failed" "$work/out" || fail "no summary line from rank 0"
    for h in 1 2; do
      sent=$(sed -n "s/^kft-cluster: host $h: link sent \([0-9]*\) bytes.*/\1/p" "$work/err")
      [[ -n $sent && $sent -gt 100000 ]] || fail "host $h sent ${sent:-?} bytes over its link, expected > 100 kB"
    done
    cat "$work/err" >&2
    expect_gone "$(cluster_id)"
    ;;

  async)
    # PROG is mp_async_stress (its arguments follow K M): every rank PASSes.
    k=$5 m=$6
    run_cluster --kfrun-arg=--timeout --kfrun-arg=200 --kfrun-arg=-x --kfrun-arg=KF_TIMEOUT_MS=30000 \
      "${env_args[@]}" "$k" "$m" -- "$PROG" "${@:7}"
    [[ $rc -eq 0 ]] || fail "async stress on $k x $m exited with $rc"
    for r in $(seq 0 $((k * m - 1))); do
      grep -Eq "^\[$r\] PASS rank $r: .*, 0 wrong elements" "$work/out" || fail "no PASS line from rank $r"
    done
    grep -E "^\[0\] PASS" "$work/out"
    cat "$work/err" >&2
    expect_gone "$(cluster_id)"
    ;;

  split)
    # PROG is split_mp: split_host and split_cross on K hosts x M ranks.
    k=$5 m=$6
    run_cluster --kfrun-arg=--timeout --kfrun-arg=100 --kfrun-arg=-x --kfrun-arg=KF_TIMEOUT_MS=30000 \
      "$k" "$m" -- "$PROG" cluster "$k" "$m"
    [[ $rc -eq 0 ]] || fail "split_mp cluster on $k x $m exited with $rc"
    for r in $(seq 0 $((k * m - 1))); do
      grep -q "^\[$r\] \[$r\] split_mp cluster: all checks passed" "$work/out" || fail "rank $r did not pass"
    done
    cat "$work/err" >&2
    expect_gone "$(cluster_id)"
    ;;

  ssh)
    sshd=$(command -v sshd || echo /usr/sbin/sshd)
    [[ -x $sshd ]] && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null ||
      { echo "SKIP: sshd, ssh or ssh-keygen not found (packages openssh-server, openssh-client)" >&2; exit $SKIP; }
    rc=0
    id=$("$CLUSTER" up 2 none 2>"$work/err") || rc=$?
    [[ $rc -eq $SKIP ]] && { cat "$work/err" >&2; exit $SKIP; }
    [[ $rc -eq 0 && -n $id ]] || fail "cluster.sh up exited with $rc"
    # Removed when this script ends, also on ctest's SIGKILL (a guard
    # outside this process tree, as cluster.sh run does).
    ( setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; "$2" down "$3"' \
        kft-guard $$ "$CLUSTER" "$id" </dev/null >/dev/null 2>&1 & )
    trap '"$CLUSTER" down "$id"; cleanup' EXIT
    x=$(( 16#${id:0:4} % 250 + 1 ))
    h1=10.213.$x.1 h2=10.213.$x.2
    ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
    ssh-keygen -q -t ed25519 -N '' -f "$work/user_key"
    cp "$work/user_key.pub" "$work/authorized_keys"
    printf '%s\n' "ListenAddress $h2" "Port 22" "HostKey $work/host_key" \
      "AuthorizedKeysFile $work/authorized_keys" "PermitRootLogin prohibit-password" \
      "PasswordAuthentication no" "KbdInteractiveAuthentication no" "UsePAM no" \
      "StrictModes no" "PidFile none" "LogLevel ERROR" >"$work/sshd_config"
    mkdir -p /run/sshd  # its privilege-separation directory
    # sshd runs in host 2 with that host's name (nsexec), so its sessions
    # (the remote ranks) are host 2 to the library; `down` kills it.
    "$CLUSTER" nsexec "$id" "$h2" "$sshd" -D -e -f "$work/sshd_config" >"$work/sshd.log" 2>&1 &
    disown  # (killed by `down`, not reported)
    for _ in $(seq 50); do
      ip netns exec "kft-$id-1" timeout 1 bash -c "exec 3<>/dev/tcp/$h2/22" 2>/dev/null && break
      sleep 0.1
    done
    ssh_opts="-i $work/user_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"
    ssh_opts+=" -o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=5"
    # kfrun in host 1: ranks 0-1 start there directly, ranks 2-3 over ssh.
    kfrun_h1() {
      rc=0
      "$CLUSTER" nsexec "$id" "$h1" "$KFRUN" -H "$h1:2,$h2:2" "$@" >"$work/out" 2>"$work/err" </dev/null ||
        rc=$?
    }
    # No rank (nor anything it started) is left in either host: only sshd.
    expect_no_ranks() {
      local i
      for i in $(seq 50); do
        if ! ip netns pids "kft-$id-1" | grep -q . &&
           ! ip netns pids "kft-$id-2" | xargs -r ps -o comm= -p 2>/dev/null | grep -qv '^sshd$'; then
          return 0
        fi
        sleep 0.1
      done
      ip netns pids "kft-$id-2" | xargs -r ps -o pid=,args= -p >&2 || true
      fail "$1: processes left in the hosts"
    }

    # The whole conformance matrix across the two hosts.
    kfrun_h1 --timeout 120 --rsh "ssh $ssh_opts {host}" -x KF_TIMEOUT_MS=30000 "$PROG" --np 4 --no-big
    [[ $rc -eq 0 ]] || { cat "$work/sshd.log" >&2; fail "conformance over ssh exited with $rc"; }
    grep -Eq "^\[0\] [0-9]+ passed, 0 failed" "$work/out" || fail "no summary line from rank 0"
    echo "conformance over ssh: $(grep -E '^\[0\] [0-9]+ passed' "$work/out")"
    expect_no_ranks conformance

    # What a rank sees: host, local numbering, working directory, root
    # address, and a -x value that would break an unquoted command line.
    tricky="a  b 'c' \"d\" \$HOME ; \`e\` & f"
    kfrun_h1 --timeout 60 --rsh "ssh $ssh_opts {host}" -x "KFT_Q=$tricky" \
      sh -c 'echo "host=$(hostname) rank=$KF_RANK local=$KF_LOCAL_RANK/$KF_LOCAL_SIZE root=$KF_ROOT_ADDR pwd=$(pwd) q=[$KFT_Q]"'
    [[ $rc -eq 0 ]] || fail "environment check over ssh exited with $rc"
    for r in 0 1 2 3; do
      want="[$r] host=kft-$id-h$(( r / 2 + 1 )) rank=$r local=$(( r % 2 ))/2 root=$h1:"
      line=$(grep -F "[$r] host=" "$work/out" || true)
      [[ $line == "$want"* ]] || fail "rank $r: '$line', expected it to start with '$want'"
      [[ $line == *" pwd=$PWD q=[$tricky]" ]] || fail "rank $r: '$line': directory or -x value changed"
    done
    echo "environment over ssh: hosts, local ranks, directory and -x value intact"

    # A remote rank fails: its code comes back through ssh, and the others
    # (one more remote, sleeping) are stopped. Plain ssh: killing the client
    # does not signal the remote command; the rank ends through its stdin,
    # which closes with the connection (see README.md).
    kfrun_h1 --timeout 60 --rsh "ssh $ssh_opts {host}" \
      sh -c 'if [ "$KF_RANK" = 2 ]; then sleep 0.5; exit 3; fi; exec sleep 100'
    [[ $rc -eq 3 ]] || fail "a remote rank's exit 3: kfrun exited with $rc"
    expect_no_ranks "exit 3"
    echo "remote exit 3: kfrun exited 3, every rank gone"

    kfrun_h1 --timeout 2 --rsh "ssh $ssh_opts {host}" sleep 100
    [[ $rc -eq 124 ]] || fail "--timeout over ssh: kfrun exited with $rc, expected 124"
    expect_no_ranks timeout
    echo "--timeout over ssh: 124, every rank gone"

    # Nobody listens on port 2222 there: ssh fails at once, with 255.
    start=$(date +%s)
    kfrun_h1 --timeout 60 --rsh "ssh -p 2222 $ssh_opts {host}" true
    [[ $rc -eq 255 ]] || fail "refused connection: kfrun exited with $rc, expected 255"
    (( $(date +%s) - start < 20 )) || fail "refused connection took $(( $(date +%s) - start )) s"
    expect_no_ranks refused
    echo "refused connection: 255"
    ;;

  cleanup)
    for sig in TERM KILL; do
      "$CLUSTER" run --kfrun "$KFRUN" 2 2 -- sleep 1000 >"$work/out" 2>"$work/err" </dev/null &
      bg_pid=$!
      for _ in $(seq 100); do
        id=$(cluster_id)
        [[ -n $id ]] && [[ $(pgrep -fc "sleep 1000" || true) -ge 4 ]] && break
        if ! kill -0 "$bg_pid" 2>/dev/null; then
          rc=0
          wait "$bg_pid" || rc=$?
          bg_pid=""
          [[ $rc -eq $SKIP ]] && { cat "$work/err" >&2; exit $SKIP; }
          fail "cluster.sh exited early with $rc"
        fi
        sleep 0.1
      done
      [[ -n $id ]] || fail "cluster did not come up"
      ip netns list | grep -q "^kft-$id-2" || fail "namespace kft-$id-2 missing while running"
      kill -$sig "$bg_pid"
      rc=0
      wait "$bg_pid" || rc=$?
      bg_pid=""
      # SIGKILL: the guard removes the cluster once cluster.sh is gone; that
      # kills the ranks, and kfrun (left orphaned) exits after them.
      expect_gone "$id"
      echo "SIG$sig: cluster $id removed (cluster.sh exited with $rc)"
    done
    ;;

  *)
    echo "unknown test $test_name" >&2
    exit 2
    ;;
esac
echo "PASS [$test_name]"
