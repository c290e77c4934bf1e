#!/bin/sh
# rank0_env.sh VAR=VALUE prog [args...]: runs prog with VAR=VALUE set on rank 0
# only (KF_RANK, from kfrun), for tests of knobs that differ between ranks.
set -eu
if [ $# -lt 2 ]; then
  echo "usage: rank0_env.sh VAR=VALUE prog [args...]" >&2
  exit 2
fi
assignment="$1"
shift
if [ "${KF_RANK:-}" = 0 ]; then export "$assignment"; fi
exec "$@"
