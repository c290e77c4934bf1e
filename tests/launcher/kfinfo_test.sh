#!/usr/bin/env bash
# kfinfo_test.sh KFINFO: kfinfo prints versions, features and every knob, as
# text and as JSON, and marks knobs set in the environment.
set -euo pipefail
KFINFO=$1
fail() { echo "FAIL [kfinfo]: $*" >&2; exit 1; }

text=$(KF_ALGO=ring "$KFINFO")
grep -Eq '^libkungfu [0-9]+\.[0-9]+\.[0-9]+$' <<<"$text" || fail "no version line"
grep -Eq '^  tcp: +yes$' <<<"$text" || fail "no tcp feature"
grep -Eq '^  KF_ALGO +auto +ring \*' <<<"$text" || fail "KF_ALGO not shown as set from the environment"
grep -Eq '^  KF_TIMEOUT_MS +60000 +60000 ' <<<"$text" || fail "KF_TIMEOUT_MS default not shown"

json=$(KF_ALGO='r"ng' "$KFINFO" --json)
grep -q '"name": "KF_ALGO", "default": "auto", "value": "r\\"ng", "from_env": true' <<<"$json" ||
  fail "KF_ALGO JSON row wrong"
grep -q '"tcp": true' <<<"$json" || fail "no tcp in JSON features"
if command -v python3 >/dev/null; then
  python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["knobs"] and d["version"]["runtime_code"] > 0' \
    <<<"$json" || fail "invalid JSON"
fi
rc=0
"$KFINFO" --bogus 2>/dev/null || rc=$?
[[ $rc -eq 2 ]] || fail "bad argument: exit code $rc, expected 2"
echo "PASS [kfinfo]"
