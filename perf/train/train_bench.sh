#!/usr/bin/env bash
# The scheduling benchmark of perf/train (see README.md there): runs
# train_bench with 2 ranks over shared memory, then 2 hosts x 1 rank over an
# emulated TCP link (tests/cluster/cluster.sh: network namespaces, tc rate
# limit) at each rate of the sweep, and prints one table per transport with
# the iteration time of every mode side by side.
#
#   perf/train/train_bench.sh [BUILD_DIR]           (default: build)
#
# Environment (defaults in brackets):
#   RATES   link rates, tc syntax   [500mbit 1gbit 2gbit 5gbit 10gbit]
#   MODELS  comma list                          [resnet50,vgg16,bert]
#   MODES   comma list                          [fifo,priority,tuned]
#   ITERS   measured iterations per mode        [3]
#   WARMUP  dropped iterations per mode         [1]
#   REPEAT  rounds over the modes (interleaved blocks; medians of the
#           block times and of the paired speedups over FIFO)  [1]
#   TUNE    tuning iterations (tuned mode)      [5]
#   SCALE   divides gradient sizes and compute times alike (keeps their
#           ratio, so the speedups; shortens the run)  [2]
#   BATCH   samples per iteration per rank      [32]
#   SHM     1: also run over shared memory      [1]
#   SHM_ITERS  measured iterations per mode over shared memory (cheap)  [10]
# The TCP part needs root (namespaces); without it, it is skipped with a note.
# Raw RESULT lines are kept in $OUT (default /tmp/kf_train_bench.<pid>.log).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
bench=$build/perf/train/train_bench
kfrun=$build/tools/kfrun
cluster=$root/tests/cluster/cluster.sh
RATES=${RATES:-500mbit 1gbit 2gbit 5gbit 10gbit}
MODELS=${MODELS:-resnet50,vgg16,bert}
MODES=${MODES:-fifo,priority,tuned}
ITERS=${ITERS:-3}
WARMUP=${WARMUP:-1}
REPEAT=${REPEAT:-1}
TUNE=${TUNE:-5}
SCALE=${SCALE:-2}
BATCH=${BATCH:-32}
SHM=${SHM:-1}
SHM_ITERS=${SHM_ITERS:-10}
OUT=${OUT:-/tmp/kf_train_bench.$$.log}

[[ -x $bench && -x $kfrun ]] || { echo "train_bench.sh: build train_bench and kfrun in $build first" >&2; exit 2; }
args=(--models "$MODELS" --modes "$MODES" --iters "$ITERS" --warmup "$WARMUP" --repeat "$REPEAT"
      --tune-iters "$TUNE" --scale "$SCALE" --batch "$BATCH")
: >"$OUT"
start=$(date +%s)

if [[ $SHM == 1 ]]; then
  echo "== shared memory, 2 ranks" >&2
  "$kfrun" -np 2 --timeout $((900 * REPEAT)) -- "$bench" "${args[@]}" --iters "$SHM_ITERS" --label shm | tee -a "$OUT"
fi
tcp_ok=1
rc=0
"$cluster" run --kfrun "$kfrun" --rate none 1 1 -- true >/dev/null 2>&1 || rc=$?
if [[ $rc != 0 ]]; then
  echo "train_bench.sh: emulated cluster unavailable here (needs root; cluster.sh exit $rc); TCP sweep skipped" >&2
  tcp_ok=0
fi
for rate in $RATES; do
  [[ $tcp_ok == 1 ]] || break
  echo "== TCP, 2 hosts x 1 rank, $rate" >&2
  "$cluster" run --kfrun "$kfrun" --rate "$rate" --kfrun-arg=--timeout --kfrun-arg=$((900 * REPEAT)) 2 1 -- \
    "$bench" "${args[@]}" --label "tcp $rate" | tee -a "$OUT"
done

# One table: a row per (transport, model), a column per mode.
/usr/bin/python3 - "$OUT" "$MODES" <<'PY'
import re, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    if "RESULT " not in line:
        continue
    kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
    kv = {k: v.strip('"') for k, v in kv.items()}
    key = (kv["label"], kv["model"])
    if key not in rows:
        rows[key] = {}
        order.append(key)
    rows[key][kv["mode"]] = kv
modes = sys.argv[2].split(",")
head = "| link | model | " + " | ".join(m + " ms" for m in modes)
if "fifo" in modes:
    head += " | " + " | ".join("speedup " + m for m in modes if m != "fifo") + " | bound"
head += " | tuned choice |"
print(head)
print("|" + "---|" * (head.count("|") - 1))
for key in order:
    r = rows[key]
    cells = [r[m]["iter_ms"] if m in r else "-" for m in modes]
    if "fifo" in modes and "fifo" in r:
        f = float(r["fifo"]["iter_ms"])
        # The bench's own speedup (with REPEAT > 1 the median of paired
        # rounds), else the ratio of the two times.
        cells += ["%.2fx" % float(r[m].get("speedup_vs_fifo", f / float(r[m]["iter_ms"])))
                  if m in r else "-" for m in modes if m != "fifo"]
        b = r["fifo"].get("bound_speedup")
        cells.append("%.2fx" % float(b) if b else "-")
    note = r.get("tuned", {}).get("note", "")
    print("| %s | %s | %s | %s |" % (key[0], key[1], " | ".join(cells), note))
PY
echo "train_bench.sh: $(( $(date +%s) - start )) s; raw lines in $OUT" >&2
