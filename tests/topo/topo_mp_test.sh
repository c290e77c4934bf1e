#!/bin/sh
# topo_mp_test.sh KFRUN TOPO_MP NP [VAR=VALUE...]: runs TOPO_MP under kfrun -np NP, then checks
# that the JSON dump rank 0 wrote is valid JSON describing NP ranks on one host (with
# /usr/bin/python3 when present; else only that it is not empty).
set -eu
kfrun=$1; prog=$2; np=$3; shift 3
out=$(mktemp /tmp/kf_topo_mp.XXXXXX)
trap 'rm -f "$out"' EXIT
set --
for kv in ${KF_TOPO_TEST_ENV:-}; do set -- "$@" -x "$kv"; done
"$kfrun" -np "$np" --timeout 60 -x KF_TIMEOUT_MS=30000 "$@" "$prog" "$out"
test -s "$out" || { echo "no JSON dump written"; exit 1; }
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 - "$out" "$np" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
np = int(sys.argv[2])
assert d["size"] == np and d["host_count"] == 1, d
assert [r["local_rank"] for r in d["ranks"]] == list(range(np)), d
assert all(r["local_size"] == np and r["host"] == 0 and r["cpus"] for r in d["ranks"]), d
assert d["hosts"][0]["ranks"] == list(range(np)) and d["hosts"][0]["core_count"] >= 1, d
print("valid JSON:", json.dumps(d)[:400])
PY
else
  echo "no /usr/bin/python3: JSON not parsed"
fi
