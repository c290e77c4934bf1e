#!/usr/bin/env bash
# An emulated cluster in network namespaces, for multi-host tests of kfrun
# and libkungfu on one machine (root only). See README.md.
#
#   cluster.sh run [options] K M -- prog [args...]
#       creates K "hosts", starts M ranks of prog on each through
#       kfrun -H ... --rsh (ip netns exec + a private hostname), prints the
#       bytes each host's link carried, and removes everything again, also
#       after a failure, Ctrl-C, SIGTERM or a SIGKILL of this script.
#       Exit status: kfrun's; 77 (skip) when namespaces, veth pairs or the
#       bridge cannot be created here.
#     options: --kfrun PATH       kfrun to use (default: kfrun on PATH)
#              --rate RATE        per-link bandwidth, tc syntax (default 1gbit;
#                                 "none": unlimited)
#              --delay DELAY      per-link one-way latency, e.g. 1ms (needs
#                                 the netem qdisc; default none)
#              --kfrun-arg ARG    extra kfrun argument (repeatable), e.g.
#                                 --kfrun-arg=--timeout --kfrun-arg=60
#   cluster.sh mpirun [options] K M -- prog [args...]
#       the same under OpenMPI's mpirun: a hostfile of the K hosts (M slots
#       each), this script as plm_rsh_agent, the bridge given an address in
#       the root namespace (10.213.X.254, for mpirun's own connections), and
#       KF_ROOT_ADDR=10.213.X.1:PORT for the ranks. options: --mpirun PATH,
#       --rate, --delay, --mpirun-arg ARG (repeatable)
#   cluster.sh up K [RATE [DELAY]]  create a cluster, print its id, keep it
#   cluster.sh down ID              remove cluster ID (namespaces, bridge,
#                                   processes inside)
#   cluster.sh hosts ID K           the -H argument for cluster ID: 10.213.X.1,...
#   cluster.sh nsexec ID HOST cmd...  run cmd "on" HOST of cluster ID: in its
#                                   namespace, with hostname kft-ID-hI (the
#                                   remote-exec command kfrun is given)
#   cluster.sh rshagent ID HOST words...  the same for a shell command line
#                                   given as words, as ssh takes it (mpirun)
#
# Names: namespaces kft-ID-I, bridge kft-br-ID, host-side veths kft-ID-I;
# addresses 10.213.X.I/24 with X derived from ID. Only these addresses are
# ever contacted.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SKIP=77

say() { echo "kft-cluster: $*" >&2; }
skip() {
  echo "SKIP: emulated cluster unavailable: $*" >&2
  exit $SKIP
}

# The third octet of cluster ID's subnet (1..250).
subnet_octet() { echo $(( 16#${1:0:4} % 250 + 1 )); }

# Removes every object of cluster $1. Idempotent; never fails.
down() {
  local id=$1 ns pids
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^kft-$id-" || true); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [[ -n $pids ]]; then kill -KILL $pids 2>/dev/null || true; fi
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "kft-br-$id" 2>/dev/null || true
  # Host-side veths go with their peers; these are only left after a
  # failure between creating a pair and moving its peer.
  local link
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep "^kft-$id-" || true); do
    ip link del "$link" 2>/dev/null || true
  done
}

# A process outside this script's process tree (so a SIGKILL of the tree,
# as ctest does on timeout, does not take it along) that removes cluster $1
# once process $2 is gone.
start_guard() {
  local id=$1 owner=$2
  ( setsid bash -c '
      while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
      "$2" down "$3"' kft-guard "$owner" "$SELF" "$id" </dev/null >/dev/null 2>&1 & )
}

# Adds a qdisc limiting rate (and delay) on device $1 (run in namespace $2
# when given).
shape() {
  local dev=$1 ns=$2 rate=$3 delay=$4
  local in=()
  [[ -n $ns ]] && in=(ip netns exec "$ns")
  [[ $rate == none && -z $delay ]] && return 0
  if [[ -n $delay ]]; then
    local args=(delay "$delay")
    [[ $rate != none ]] && args+=(rate "$rate")
    if "${in[@]}" tc qdisc add dev "$dev" root netem "${args[@]}" 2>/dev/null; then return 0; fi
    say "note: the netem qdisc is not available here; links get no added latency"
    delay=""
  fi
  if [[ $rate != none ]]; then
    # burst: large enough for a GSO packet and a few ms at high rates.
    "${in[@]}" tc qdisc add dev "$dev" root tbf rate "$rate" burst 1mb latency 50ms ||
      say "note: cannot add a tbf qdisc on $dev; the link is not rate-limited"
  fi
}

# Creates cluster $1 with $2 hosts; prints nothing. Exits 77 when this
# machine does not allow it.
up() {
  local id=$1 k=$2 rate=${3:-1gbit} delay=${4:-}
  local x i ns veth
  x=$(subnet_octet "$id")
  [[ $(id -u) -eq 0 ]] || skip "needs root (creates network namespaces)"
  local tool
  for tool in ip tc unshare timeout; do
    command -v $tool >/dev/null || skip "$tool not found (packages iproute2, util-linux, coreutils)"
  done
  ip netns add "kft-$id-1" 2>/dev/null || skip "'ip netns add' is not permitted here"
  ip link add "kft-br-$id" type bridge 2>/dev/null || skip "cannot create a bridge"
  ip link set "kft-br-$id" up
  # The namespaces' traffic must stay on the bridge: no address and no
  # forwarding in the root namespace.
  for i in $(seq 1 "$k"); do
    ns="kft-$id-$i"
    veth="kft-$id-$i"
    [[ $i -eq 1 ]] || ip netns add "$ns"
    ip link add "$veth" type veth peer name "${veth}p" 2>/dev/null || skip "cannot create a veth pair"
    ip link set "${veth}p" netns "$ns"
    ip -n "$ns" link set "${veth}p" name eth0
    ip -n "$ns" addr add "10.213.$x.$i/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    ip link set "$veth" master "kft-br-$id"
    ip link set "$veth" up
    shape "$veth" "" "$rate" "$delay"   # towards host i
    shape eth0 "$ns" "$rate" "$delay"   # from host i
  done
  unshare --uts true 2>/dev/null || skip "'unshare --uts' is not permitted here"
  # A bridge whose traffic a firewall drops (br_netfilter) is no cluster:
  # a TCP connect from host 1 to a closed port of host 2 must be refused
  # (answered), not time out.
  if [[ $k -ge 2 ]]; then
    local tries out
    for tries in $(seq 10); do
      out=$(ip netns exec "kft-$id-1" timeout 1 bash -c "exec 3<>/dev/tcp/10.213.$x.2/9" 2>&1) && return 0
      [[ $out == *refused* ]] && return 0
    done
    skip "hosts cannot reach each other over the bridge (firewall on bridged traffic?): $out"
  fi
}

hosts_arg() {
  local id=$1 k=$2 m=${3:-} x i out=""
  x=$(subnet_octet "$id")
  for i in $(seq 1 "$k"); do out+="${out:+,}10.213.$x.$i${m:+:$m}"; done
  echo "$out"
}

# Bytes each host's link carried, as "kft-cluster: host I: rx N tx N bytes".
link_stats() {
  local id=$1 k=$2 i
  for i in $(seq 1 "$k"); do
    local rx tx
    rx=$(cat "/sys/class/net/kft-$id-$i/statistics/rx_bytes" 2>/dev/null || echo 0)
    tx=$(cat "/sys/class/net/kft-$id-$i/statistics/tx_bytes" 2>/dev/null || echo 0)
    say "host $i: link sent $rx bytes, received $tx bytes"
  done
}

new_id() { head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
  nsexec)
    id=$1 host=$2
    shift 2
    i=${host##*.}
    exec ip netns exec "kft-$id-$i" unshare --uts sh -c 'hostname "$0" && exec "$@"' "kft-$id-h$i" "$@"
    ;;
  rshagent)
    id=$1 host=$2
    shift 2
    exec "$SELF" nsexec "$id" "$host" sh -c "$*"
    ;;
  up)
    id=$(new_id)
    trap 'down "$id"' EXIT
    up "$id" "$@"
    trap - EXIT
    echo "$id"
    ;;
  down)
    down "$1"
    ;;
  hosts)
    hosts_arg "$@"
    ;;
  run|mpirun)
    kfrun=kfrun mpirun=mpirun rate=1gbit delay="" launcher_args=()
    while [[ $# -gt 0 && $1 == --* ]]; do
      case $1 in
        --kfrun) kfrun=$2; shift 2 ;;
        --kfrun=*) kfrun=${1#*=}; shift ;;
        --mpirun) mpirun=$2; shift 2 ;;
        --mpirun=*) mpirun=${1#*=}; shift ;;
        --rate) rate=$2; shift 2 ;;
        --rate=*) rate=${1#*=}; shift ;;
        --delay) delay=$2; shift 2 ;;
        --delay=*) delay=${1#*=}; shift ;;
        --kfrun-arg|--mpirun-arg) launcher_args+=("$2"); shift 2 ;;
        --kfrun-arg=*|--mpirun-arg=*) launcher_args+=("${1#*=}"); shift ;;
        *) echo "cluster.sh $cmd: unknown option $1" >&2; exit 2 ;;
      esac
    done
    [[ $# -ge 4 && $3 == -- ]] || { echo "usage: cluster.sh $cmd [options] K M -- prog [args...]" >&2; exit 2; }
    k=$1 m=$2
    shift 3
    [[ $k =~ ^[1-9][0-9]?$ && $m =~ ^[1-9][0-9]?$ && $k -le 32 ]] || { echo "cluster.sh $cmd: K (1..32) and M (1..99) must be numbers" >&2; exit 2; }
    if [[ $cmd == mpirun ]] && ! command -v "$mpirun" >/dev/null; then skip "mpirun not found"; fi
    id=$(new_id)
    # Removal on every way out: normal exit, failure, Ctrl-C, SIGTERM, and
    # (through the guard) SIGKILL.
    trap 'down "$id"; rm -f "${hostfile:-}"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    start_guard "$id" $$
    up "$id" "$k" "$rate" "$delay"
    x=$(subnet_octet "$id")
    say "cluster $id: $k hosts x $m ranks, links ${rate} ${delay:+delay $delay}, hosts $(hosts_arg "$id" "$k")"
    rc=0
    # Not exec: the traps must run afterwards. The launcher runs in the
    # background so that a signal to this script is handled at once (and
    # forwarded).
    if [[ $cmd == run ]]; then
      "$kfrun" -H "$(hosts_arg "$id" "$k" "$m")" --rsh "$SELF nsexec $id {host} sh -c" \
        "${launcher_args[@]}" -- "$@" &
    else
      ip addr add "10.213.$x.254/24" dev "kft-br-$id"
      hostfile=$(mktemp /tmp/kft-hostfile.XXXXXX)
      for i in $(seq 1 "$k"); do echo "10.213.$x.$i slots=$m"; done >"$hostfile"
      "$mpirun" --allow-run-as-root --hostfile "$hostfile" -np $((k * m)) \
        --mca plm_rsh_agent "$SELF rshagent $id" \
        --mca oob_tcp_if_include "10.213.$x.0/24" --mca btl self,tcp --mca btl_tcp_if_include "10.213.$x.0/24" \
        -x "KF_ROOT_ADDR=10.213.$x.1:$(( 20000 + 16#$id % 12000 ))" "${launcher_args[@]}" "$@" &
    fi
    launcher_pid=$!
    trap 'kill -TERM $launcher_pid 2>/dev/null; wait $launcher_pid; exit 130' INT
    trap 'kill -TERM $launcher_pid 2>/dev/null; wait $launcher_pid; exit 143' TERM
    wait $launcher_pid || rc=$?
    link_stats "$id" "$k"
    exit $rc
    ;;
  *)
    sed -n '2,/^set -euo/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
