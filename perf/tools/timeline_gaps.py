#!/usr/bin/python3
"""Partition times, gaps and overlaps in KF_TIMELINE files (docs/timeline.md).

Usage: timeline_gaps.py [--skip N] <prefix>.rank0.json [<prefix>.rank1.json ...]

For each rank's file: how long its partitions ran (the "chunk" slices:
median, 10th and 90th percentile, in us), the time between one partition's
end and the next one's start on the rank (gaps; negative when the next one
started first, i.e. two ran at once), how many overlapped the one before,
and which threads ran them. --skip drops each rank's first N partitions
(a benchmark's warm-up). A rank whose asynchronous step is slower than the
same blocking calls while its partitions take the blocking call's time
loses the difference in these gaps and overlaps.
"""
import collections
import json
import sys


def quantile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, int(q * len(sorted_values)))
    return sorted_values[i]


def partitions(path):
    """[(start us, end us, tid, name)] of the file's partition slices, by start."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    begun = {}
    spans = []
    for e in events:
        if e.get("cat") != "chunk":
            continue
        # A partition's begin and end carry the same id (the operation's,
        # with the partition index appended) and name ("<op> #k").
        key = (e.get("id"), e.get("name"))
        if e.get("ph") == "b":
            begun[key] = e
        elif e.get("ph") == "e" and key in begun:
            b = begun.pop(key)
            spans.append((b["ts"], e["ts"], b.get("tid"), b.get("name", "")))
    spans.sort()
    return spans


def report(path, skip):
    spans = partitions(path)[skip:]
    if len(spans) < 2:
        print(f"{path}: {len(spans)} partitions (after --skip {skip}): nothing to measure")
        return
    durations = sorted(end - start for start, end, _, _ in spans)
    gaps = []
    overlaps = 0
    last_end = spans[0][1]
    for start, end, _, _ in spans[1:]:
        gap = start - last_end
        gaps.append(gap)
        if gap < 0:
            overlaps += 1
        last_end = max(last_end, end)
    gaps_sorted = sorted(gaps)
    idle = sum(g for g in gaps if g > 0)
    busy = last_end - spans[0][0]  # (the last to start need not be the last to end)
    threads = collections.Counter(tid for _, _, tid, _ in spans)
    print(f"{path}: {len(spans)} partitions over {busy / 1000:.1f} ms")
    print(f"  duration us: median {quantile(durations, 0.5):.0f}, "
          f"p10 {quantile(durations, 0.1):.0f}, p90 {quantile(durations, 0.9):.0f}")
    print(f"  gap to the next us: median {quantile(gaps_sorted, 0.5):.1f}, "
          f"p10 {quantile(gaps_sorted, 0.1):.1f}, p90 {quantile(gaps_sorted, 0.9):.1f}; "
          f"no partition running: {idle / 1000:.1f} ms ({100.0 * idle / busy:.1f}%)")
    print(f"  started while another still ran: {overlaps} ({100.0 * overlaps / len(gaps):.1f}%)")
    shares = ", ".join(f"tid {t}: {n}" for t, n in threads.most_common())
    print(f"  threads: {shares}")


def main(argv):
    skip = 0
    paths = []
    i = 1
    while i < len(argv):
        if argv[i] == "--skip" and i + 1 < len(argv):
            skip = int(argv[i + 1])
            i += 2
        elif argv[i].startswith("-"):
            sys.exit(__doc__)
        else:
            paths.append(argv[i])
            i += 1
    if not paths:
        sys.exit(__doc__)
    for p in paths:
        report(p, skip)


if __name__ == "__main__":
    main(sys.argv)
