#!/usr/bin/env bash
# compare.sh: side-by-side allreduce comparison on this machine, in one run.
#
# Runs float32-sum allreduce at the same sizes and number of ranks with
#   kungfu      libkungfu's all_reduce_perf (default transport), under kfrun
#   kungfu-tcp  the same with KF_TRANSPORT=tcp
#   openmpi     kf_mpi_allreduce_bench: MPI_Allreduce under mpirun, btl self,vader
#               (shared memory; ranks bound to cores unless np > cores)
#   gloo        kf_gloo_allreduce_bench: Gloo's ring allreduce over TCP on 127.0.0.1
# and kf_memcpy_probe (single-thread memcpy bandwidth), then prints one table
# of busbw and ratios, the smallest-size latency, memcpy bandwidth, and an
# evaluation of the project's targets; writes CSV, the table and a PNG plot
# (gnuplot) of busbw against size into the output directory.
#
# All programs time the out-of-place call with the all_reduce_perf
# conventions: time = mean over iterations on each rank, max over ranks;
# algbw = size / time (GB = 1e9 bytes); busbw = algbw * 2(n-1)/n.
#
# Exit status: 0 when every run worked and every result was correct (missed
# targets are reported, not failed); 1 on a failed run or wrong results;
# 2 on a usage error; 77 when a required comparison program or tool is missing
# (OpenMPI, Gloo or gnuplot), unless --allow-missing.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: compare.sh [options] [BUILD_DIR]

  BUILD_DIR         CMake build directory (default ./build)
  -o, --out DIR     output directory (default BUILD_DIR/compare)
  -N, --np N        number of ranks (default 2)
  -b, --min BYTES   smallest size, K/M/G suffixes (default 8)
  -e, --max BYTES   largest size (default 64M); always measured, even when the
                    factor steps over it
  -f, --factor F    size factor per step (default 4)
  -n, --iters N     timed iterations per size (default 50)
  -w, --warmup N    warm-up iterations per size (default 50; Gloo needs
                    dozens of calls before its small-message latency settles)
  -c, --check 0|1   validate results (default 1)
  -r, --memcpy-reps N  memcpy probe repetitions, best taken (default 20)
  -t, --timeout S   time limit of each run in seconds (default 600)
  --only LIST       comma-separated subset of kungfu,kungfu-tcp,openmpi,gloo
  --allow-missing   run what is available instead of exiting 77 when OpenMPI,
                    Gloo or gnuplot is missing
  -h, --help        this text

Outputs in the output directory: table.txt (what is printed), results.csv
(impl,np,size_bytes,time_us,algbw,busbw,wrong), memcpy.csv, summary.csv (one
row per size with every busbw and the ratios), targets.csv, busbw.png,
busbw.gp, raw/ (every program's own output).
EOF
}

die() {
  echo "compare.sh: $*" >&2
  exit 2
}

# Bytes from "8", "64K", "64M", "1G" (optionally followed by B).
to_bytes() {
  local s=${1%[bB]} mul=1
  case $s in
    *[kK]) mul=1024; s=${s%?} ;;
    *[mM]) mul=$((1024 * 1024)); s=${s%?} ;;
    *[gG]) mul=$((1024 * 1024 * 1024)); s=${s%?} ;;
  esac
  [[ $s =~ ^[0-9]+$ ]] || die "bad size '$1'"
  echo $((s * mul))
}

build=""
out=""
np=2
min=8
max=$((64 * 1024 * 1024))
factor=4
iters=50
warmup=50
check=1
memcpy_reps=20
timeout_s=600
only="kungfu,kungfu-tcp,openmpi,gloo"
allow_missing=0

while [ $# -gt 0 ]; do
  case $1 in
    -o | --out) out=${2:?}; shift 2 ;;
    -N | --np) np=${2:?}; shift 2 ;;
    -b | --min) min=$(to_bytes "${2:?}"); shift 2 ;;
    -e | --max) max=$(to_bytes "${2:?}"); shift 2 ;;
    -f | --factor) factor=${2:?}; shift 2 ;;
    -n | --iters) iters=${2:?}; shift 2 ;;
    -w | --warmup) warmup=${2:?}; shift 2 ;;
    -c | --check) check=${2:?}; shift 2 ;;
    -r | --memcpy-reps) memcpy_reps=${2:?}; shift 2 ;;
    -t | --timeout) timeout_s=${2:?}; shift 2 ;;
    --only) only=${2:?}; shift 2 ;;
    --allow-missing) allow_missing=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) usage >&2; die "unknown option '$1'" ;;
    *) [ -z "$build" ] || die "more than one build directory"; build=$1; shift ;;
  esac
done
build=${build:-./build}
[[ $np =~ ^[0-9]+$ ]] && [ "$np" -ge 1 ] || die "bad --np '$np'"
[[ $iters =~ ^[0-9]+$ ]] && [ "$iters" -ge 1 ] || die "bad --iters '$iters'"
[[ $warmup =~ ^[0-9]+$ ]] || die "bad --warmup '$warmup'"
[[ $check =~ ^[01]$ ]] || die "bad --check '$check'"
[[ $memcpy_reps =~ ^[0-9]+$ ]] && [ "$memcpy_reps" -ge 1 ] || die "bad --memcpy-reps"
[[ $timeout_s =~ ^[0-9]+$ ]] && [ "$timeout_s" -ge 1 ] || die "bad --timeout '$timeout_s'"
awk -v f="$factor" 'BEGIN { exit !(f + 0 > 1) }' || die "--factor must be > 1"
[ "$min" -le "$max" ] || die "--min must not exceed --max"
[ -d "$build" ] || die "no build directory '$build' (build first, or pass BUILD_DIR)"
build=$(cd "$build" && pwd)
out=${out:-$build/compare}

kfrun=$build/tools/kfrun
kf_perf=$build/perf/all_reduce_perf
mpi_bench=$build/perf/compare/kf_mpi_allreduce_bench
gloo_bench=$build/perf/compare/kf_gloo_allreduce_bench
memcpy_probe=$build/perf/compare/kf_memcpy_probe
for f in "$kfrun" "$kf_perf" "$memcpy_probe"; do
  [ -x "$f" ] || { echo "compare.sh: missing $f (build it first)" >&2; exit 1; }
done

# Which implementations run.
want() { [[ ",$only," == *",$1,"* ]]; }
for i in ${only//,/ }; do
  case $i in kungfu | kungfu-tcp | openmpi | gloo) ;; *) die "unknown implementation '$i' in --only" ;; esac
done
missing=()
mpirun_bin=$(command -v mpirun || true)
if want openmpi && { [ -z "$mpirun_bin" ] || [ ! -x "$mpi_bench" ]; }; then
  missing+=("openmpi (needs mpirun from openmpi-bin and kf_mpi_allreduce_bench, built when libopenmpi-dev is installed)")
  only=$(echo ",$only," | sed 's/,openmpi,/,/; s/^,//; s/,$//')
fi
if want gloo && [ ! -x "$gloo_bench" ]; then
  missing+=("gloo (needs kf_gloo_allreduce_bench, built when libgloo-dev is installed)")
  only=$(echo ",$only," | sed 's/,gloo,/,/; s/^,//; s/,$//')
fi
have_gnuplot=1
command -v gnuplot >/dev/null 2>&1 || { have_gnuplot=0; missing+=("gnuplot (Debian gnuplot-nox) for the PNG plot"); }
if [ ${#missing[@]} -gt 0 ]; then
  for m in "${missing[@]}"; do echo "compare.sh: missing: $m" >&2; done
  if [ "$allow_missing" -eq 0 ]; then
    echo "compare.sh: SKIPPED: comparison needs OpenMPI, Gloo and gnuplot (or pass --allow-missing)" >&2
    exit 77
  fi
fi
impls=()
for i in kungfu kungfu-tcp openmpi gloo; do want "$i" && impls+=("$i"); done
[ ${#impls[@]} -gt 0 ] || die "nothing to run"

mkdir -p "$out/raw"
work=$(mktemp -d "${TMPDIR:-/tmp}/kf-compare.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The sweep as the programs walk it: min, min*f, ... <= max. When that misses
# max, max is measured by a second invocation of each program.
sweep_last=$(awk -v b="$min" -v e="$max" -v f="$factor" \
  'BEGIN { s = b; last = b; while (s <= e) { last = s; n = int(s * f); if (n <= s) break; s = n } printf "%d", last }')
extra_max=0
[ "$sweep_last" -lt "$max" ] && extra_max=1

# Does this libkungfu know KF_TRANSPORT yet? (kfinfo lists the knobs.)
transport_note=""
if [ -x "$build/tools/kfinfo" ] && ! "$build/tools/kfinfo" 2>/dev/null | grep -q KF_TRANSPORT; then
  transport_note="note: this libkungfu does not list KF_TRANSPORT (kfinfo): kungfu and kungfu-tcp run the same (TCP loopback) path"
fi

sweep_args=(-f "$factor" -n "$iters" -w "$warmup" -c "$check")
# mpirun: --oversubscribe only when there are more ranks than cores. With it,
# OpenMPI yields the CPU while idle and does not bind ranks to cores, which
# is not how it runs in practice (and it is several times slower then).
ompi_oversub=()
[ "$np" -gt "$(nproc)" ] && ompi_oversub=(--oversubscribe)
status=0

# run_impl NAME: runs one implementation over the sweep (and max if needed),
# appends "impl,size,time_us,wrong" rows to $work/NAME.csv.
run_impl() {
  local name=$1 raw=$out/raw/$1.txt ranges=("$min:$max")
  [ "$extra_max" -eq 1 ] && ranges+=("$max:$max")
  : >"$raw"
  : >"$work/$name.csv"
  local r b e rc
  for r in "${ranges[@]}"; do
    b=${r%%:*}
    e=${r##*:}
    local cmd=()
    case $name in
      kungfu) cmd=("$kfrun" -np "$np" --timeout "$timeout_s" -q "$kf_perf" -b "$b" -e "$e" "${sweep_args[@]}") ;;
      kungfu-tcp) cmd=("$kfrun" -np "$np" --timeout "$timeout_s" -q -x KF_TRANSPORT=tcp "$kf_perf" -b "$b" -e "$e" "${sweep_args[@]}") ;;
      openmpi) cmd=(timeout -k 10 "$timeout_s" "$mpirun_bin" --allow-run-as-root "${ompi_oversub[@]}" --mca plm isolated
                    --mca btl self,vader -np "$np" "$mpi_bench" -b "$b" -e "$e" "${sweep_args[@]}") ;;
      gloo)
        local store
        store=$(mktemp -d "$work/gloo-store.XXXXXX")
        cmd=("$kfrun" -np "$np" --timeout "$timeout_s" -q "$gloo_bench" -s "$store" -b "$b" -e "$e" "${sweep_args[@]}") ;;
    esac
    echo "\$ ${cmd[*]}" >>"$raw"
    echo "compare.sh: running $name ($b..$e bytes) ..." >&2
    rc=0
    "${cmd[@]}" >>"$raw" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
      echo "compare.sh: $name failed (exit $rc); its output is in $raw:" >&2
      tail -n 20 "$raw" >&2
      status=1
    fi
  done
  # all_reduce_perf: nccl-tests text, rank 0 rows; out-of-place columns 6..9.
  # The comparison programs: CSV rows "impl,size,time,algbw,busbw,wrong".
  # Kept: size, time (us), #wrong.
  case $name in
    kungfu | kungfu-tcp)
      sed -E 's/^\[[0-9]+\] //' "$raw" | awk -v impl="$name" '
        /^#/ || NF < 13 { next }
        $1 ~ /^[0-9]+$/ && $3 == "float" && $4 == "sum" {
          print impl "," $1 "," $6 "," $9 }' >>"$work/$name.csv" ;;
    *)
      sed -E 's/^\[[0-9]+\] //' "$raw" | awk -F, -v impl="$name" '
        $1 == impl && $2 ~ /^[0-9]+$/ { print impl "," $2 "," $3 "," $6 }' \
        >>"$work/$name.csv" ;;
  esac
  if [ ! -s "$work/$name.csv" ]; then
    echo "compare.sh: $name produced no result rows (see $raw)" >&2
    status=1
  fi
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
echo "compare.sh: np=$np sizes $min..$max factor $factor, iters $iters, warmup $warmup; load $load_before" >&2

# memcpy first, on a quiet machine, then every implementation.
echo "compare.sh: running memcpy probe ..." >&2
"$memcpy_probe" -s "$max" -r "$memcpy_reps" >"$out/raw/memcpy.txt" 2>&1 || {
  echo "compare.sh: memcpy probe failed" >&2
  cat "$out/raw/memcpy.txt" >&2
  exit 1
}
grep -E '^(impl|memcpy),' "$out/raw/memcpy.txt" >"$out/memcpy.csv"
memcpy_gbps=$(awk -F, '$1 == "memcpy" { print $4 }' "$out/memcpy.csv")

for i in "${impls[@]}"; do run_impl "$i"; done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

{
  echo "impl,np,size_bytes,time_us,algbw,busbw,wrong"
  # Rows "impl,size,time_us,wrong"; bandwidths recomputed from the time (the
  # nccl-tests text rounds busbw to 0.01 GB/s, too coarse for small sizes).
  for i in "${impls[@]}"; do sort -t, -k2,2n -u "$work/$i.csv"; done |
    awk -F, -v np="$np" '{
      bus = np > 1 ? 2.0 * (np - 1) / np : 0
      alg = $3 > 0 ? $2 / $3 / 1e3 : 0
      printf "%s,%d,%d,%s,%.6f,%.6f,%s\n", $1, np, $2, $3, alg, alg * bus, $4 }'
} >"$out/results.csv"

# One table, the summary CSV, the targets CSV and the gnuplot data, in awk.
awk -F, -v impls="${impls[*]}" -v np="$np" -v memcpy="$memcpy_gbps" -v maxsz="$max" \
  -v minsz="$min" -v summary="$out/summary.csv" -v targets="$out/targets.csv" \
  -v plotdat="$work/plot.dat" -v load1="$load_before" -v load2="$load_after" \
  -v note="$transport_note" -v ncores="$(nproc)" '
  function human(b) {
    if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
    if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
    return b " B"
  }
  function ratio(a, b) { return (a != "" && b != "" && b + 0 > 0) ? a / b : "" }
  function fmt_ratio(r) { return r == "" ? "n/a" : sprintf("%.2fx", r) }
  function fmt_bw(v) { return v == "" ? "n/a" : sprintf("%.3f", v) }
  function has(i) { return (i in present) }
  # target(id, text, measured, op, bound): op ">=" or "<=" on a ratio.
  function target(id, text, m, op, bound,   verdict, by) {
    if (m == "") { verdict = "NOT MEASURED"; by = "" }
    else if ((op == ">=" && m >= bound) || (op == "<=" && m <= bound)) verdict = "MET"
    else {
      by = (op == ">=") ? bound / m : m / bound
      verdict = sprintf("MISSED by %.2fx", by)
    }
    printf "  %-3s %-52s %9s  %-16s\n", id, text, m == "" ? "n/a" : sprintf("%.3f", m), verdict
    printf "%s,\"%s\",%s,%s,%s,%s\n", id, text, m, op, bound, verdict >> targets
  }
  NR == 1 { next }
  {
    impl = $1; size = $3 + 0
    time[impl, size] = $4; busbw[impl, size] = $6; wrong[impl, size] = $7
    present[impl] = 1
    if (!(size in seen)) { seen[size] = 1; sizes[++ns] = size }
    if ($7 != "0" && $7 != "N/A") bad = bad sprintf(" %s@%d:%s", impl, size, $7)
  }
  END {
    n = split(impls, order, " ")
    # sort sizes
    for (i = 1; i <= ns; i++) for (j = i + 1; j <= ns; j++) if (sizes[j] < sizes[i]) { t = sizes[i]; sizes[i] = sizes[j]; sizes[j] = t }
    small = sizes[1]; big = sizes[ns]
    printf "# allreduce float32 sum, out of place, np=%d, on %d cores; busbw in GB/s (GB = 1e9 B),", np, ncores
    printf " busbw = algbw * 2(n-1)/n; time = mean over iterations, max over ranks\n"
    printf "# load average before: %s, after: %s\n", load1, load2
    split(load1, la1, " "); split(load2, la2, " ")
    if (la1[1] + 0 > ncores / 2 || la2[1] + 0 > ncores / 2)
      printf "# WARNING: other work was running (1-minute load > %g on %d cores): these numbers are noisy\n", ncores / 2, ncores
    if (note != "") printf "# %s\n", note
    printf "\n%10s", "size"
    for (k = 1; k <= n; k++) printf " %11s", order[k]
    printf " %9s %9s %11s\n", "kf/ompi", "kf/gloo", "kftcp/gloo"
    printf "size_bytes" > summary
    for (k = 1; k <= n; k++) printf ",busbw_%s", order[k] >> summary
    printf ",kungfu_over_openmpi,kungfu_over_gloo,kungfutcp_over_gloo\n" >> summary
    printf "# size" > plotdat
    for (k = 1; k <= n; k++) printf " %s", order[k] >> plotdat
    printf "\n" >> plotdat
    for (s = 1; s <= ns; s++) {
      sz = sizes[s]
      printf "%10s", human(sz)
      printf "%d", sz >> summary
      printf "%d", sz >> plotdat
      for (k = 1; k <= n; k++) {
        v = ((order[k], sz) in busbw) ? busbw[order[k], sz] : ""
        printf " %11s", fmt_bw(v)
        printf ",%s", v >> summary
        printf " %s", (v == "" || v + 0 <= 0) ? "NaN" : v >> plotdat
      }
      r1 = ratio(busbw["kungfu", sz], busbw["openmpi", sz])
      r2 = ratio(busbw["kungfu", sz], busbw["gloo", sz])
      r3 = ratio(busbw["kungfu-tcp", sz], busbw["gloo", sz])
      printf " %9s %9s %11s\n", fmt_ratio(r1), fmt_ratio(r2), fmt_ratio(r3)
      printf ",%s,%s,%s\n", r1, r2, r3 >> summary
      printf "\n" >> plotdat
    }
    printf "\nlatency at %s (us, lower is better):", human(small)
    for (k = 1; k <= n; k++) printf "  %s %s", order[k], ((order[k], small) in time) ? sprintf("%.2f", time[order[k], small]) : "n/a"
    l1 = ratio(time["kungfu", small], time["openmpi", small])
    l2 = ratio(time["kungfu", small], time["gloo", small])
    l3 = ratio(time["kungfu-tcp", small], time["gloo", small])
    printf "\n  kungfu/openmpi %s   kungfu/gloo %s   kungfu-tcp/gloo %s\n", fmt_ratio(l1), fmt_ratio(l2), fmt_ratio(l3)
    pct = ratio(busbw["kungfu", big], memcpy)
    printf "\nmemcpy (1 thread, %s): %.3f GB/s;  kungfu %s busbw %s GB/s = %s of memcpy\n", human(maxsz), memcpy,
           human(big), fmt_bw(busbw["kungfu", big]), pct == "" ? "n/a" : sprintf("%.1f%%", 100 * pct)
    if (has("kungfu-tcp")) {
      pct2 = ratio(busbw["kungfu-tcp", big], memcpy)
      printf "                                 kungfu-tcp %s busbw %s GB/s = %s of memcpy\n", human(big),
             fmt_bw(busbw["kungfu-tcp", big]), pct2 == "" ? "n/a" : sprintf("%.1f%%", 100 * pct2)
    }

    printf "\ntargets (defined for np=2 at 64 MiB and 8 B; here np=%d at %s and %s):\n", np, human(big), human(small)
    if (np != 2 || big != 67108864 || small != 8) printf "  (sizes or np differ from the targets: indicative only)\n"
    printf "  %-3s %-52s %9s  %s\n", "id", "target", "measured", "verdict"
    printf "id,target,measured,op,bound,verdict\n" > targets
    target("T1", "busbw(max size): kungfu / openmpi >= 2", ratio(busbw["kungfu", big], busbw["openmpi", big]), ">=", 2)
    target("T2", "busbw(max size): kungfu / gloo >= 4", ratio(busbw["kungfu", big], busbw["gloo", big]), ">=", 4)
    target("T3", "busbw(max size): kungfu / memcpy >= 0.40", pct, ">=", 0.4)
    target("T4", "latency(min size): kungfu / openmpi <= 1.5", l1, "<=", 1.5)
    target("T5", "latency(min size): kungfu / gloo <= 0.1", l2, "<=", 0.1)
    target("T6", "busbw(max size): kungfu-tcp / gloo >= 1.5", ratio(busbw["kungfu-tcp", big], busbw["gloo", big]), ">=", 1.5)
    if (bad != "") printf "\nWRONG RESULTS (impl@size:#wrong):%s\n", bad
    else printf "\nall results validated: 0 wrong elements\n"
  }' "$out/results.csv" | tee "$work/table.txt"

{
  echo "# compare.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname): $(basename "$0") np=$np -b $min -e $max -f $factor -n $iters -w $warmup"
  cat "$work/table.txt"
} >"$out/table.txt"
grep -q '^WRONG RESULTS' "$work/table.txt" && status=1

# The plot: busbw against size, log2 x, log10 y, memcpy as a reference line.
if [ "$have_gnuplot" -eq 1 ]; then
  {
    echo "set terminal pngcairo size 1200,700 enhanced font 'Sans,11'"
    echo "set output '$out/busbw.png'"
    echo "set title 'allreduce float32 sum, np=$np, this machine ($(nproc) cores): busbw vs size'"
    echo "set xlabel 'message size (bytes)'"
    echo "set ylabel 'busbw (GB/s, GB = 10^9 B)'"
    echo "set logscale x 2"
    echo "set logscale y 10"
    # Half a step of padding, so the end points and their labels show.
    awk -F, 'NR > 1 && $3 > 0 { if (lo == "" || $3 < lo) lo = $3; if ($3 > hi) hi = $3 }
      END { if (lo != "") printf "set xrange [%g:%g]\n", lo / 1.6, hi * 1.6 }' "$out/results.csv"
    echo "set format y '%g'"
    echo "set grid xtics ytics mytics"
    echo "set key outside right top box"
    # Size labels at each measured size.
    printf "set xtics ("
    awk -F, 'NR > 1 { print $3 }' "$out/results.csv" | sort -n -u | awk '
      function human(b) {
        if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) "M"
        if (b >= 1024 && b % 1024 == 0) return (b / 1024) "K"
        return b
      }
      { printf "%s\"%s\" %d", (NR > 1 ? ", " : ""), human($1), $1 }'
    echo ") rotate by -45"
    echo "set datafile missing 'NaN'"
    printf "plot "
    k=2
    for i in "${impls[@]}"; do
      printf "'%s' using 1:%d with linespoints lw 2 pt %d title '%s', " "$out/busbw.dat" "$k" "$k" "$i"
      k=$((k + 1))
    done
    printf "%s with lines dt 2 lw 2 lc rgb 'gray40' title 'memcpy 1 thread (%.2f GB/s)'\n" "$memcpy_gbps" "$memcpy_gbps"
  } >"$out/busbw.gp"
  cp "$work/plot.dat" "$out/busbw.dat"
  if ! gnuplot "$out/busbw.gp" 2>"$work/gnuplot.err"; then
    echo "compare.sh: gnuplot failed:" >&2
    cat "$work/gnuplot.err" >&2
    status=1
  fi
fi

echo "compare.sh: wrote $out/{table.txt,results.csv,summary.csv,targets.csv,memcpy.csv$([ "$have_gnuplot" -eq 1 ] && echo ,busbw.png)}" >&2
exit "$status"
