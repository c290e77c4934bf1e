#!/usr/bin/python3
"""Cache misses per operation in a callgrind profile taken with --cache-sim=yes.

Usage: callgrind_misses.py <callgrind.out file> <operations>

Prints two views of the last-level misses (DLmr + DLmw), divided by
`operations` (e.g. n x k of async_overhead -p):
  - the bookkeeping: every function's own misses, except the bulk data
    (memcpy/memmove and the reduction kernel), the barrier's spin and the
    clock, whose counts follow the data and the timing rather than the code;
  - by call: the inclusive misses of the C API entry points in the profile,
    with the data's own misses taken out.
Size the simulated last level as the host's L2 (the lines a core keeps), e.g.
  kfrun -np 2 valgrind --tool=callgrind --cache-sim=yes --LL=1048576,16,64
    --toggle-collect=kf_perf_async_steps async_overhead -p async -n 40 -b 1048576
  perf/tools/callgrind_misses.py callgrind.out.<pid of rank 0> 640
(one command line; 640 = 40 steps x 16 operations). The counts that follow
the other rank's timing vary from run to run (session 31: the bookkeeping of
one library read 98-107 per operation in three runs; kf_iall_reduce's and
kf_request_free's counts by call stayed within 0.1): compare several runs. The simulation
sees one thread and no traffic between cores: judge a change by timing too.
Uses callgrind_annotate (valgrind).
"""
import re
import signal
import subprocess
import sys

# The bulk data's functions, and with them those whose own misses follow the
# timing (the barrier's spin, the clock): neither is bookkeeping.
DATA_PATTERN = r'memcpy|memmove|avxintrin|kernels::'
DATA = re.compile(DATA_PATTERN)
EXCLUDED = re.compile(DATA_PATTERN + r'|staging_barrier|clock_gettime|steady_clock|'
                      r'Doorbell::sleep|OpArena::barrier')
API = re.compile(r':(kf_[a-z_]+) \[')


def rows(path, inclusive):
    """[(DLmr, DLmw, function)] from callgrind_annotate."""
    out = subprocess.run(
        ['callgrind_annotate', '--inclusive=' + ('yes' if inclusive else 'no'),
         '--threshold=100', '--auto=no', '--show=DLmr,DLmw', '--sort=DLmr', path],
        check=True, capture_output=True, text=True).stdout
    result = []
    started = False
    for line in out.splitlines():
        if 'file:function' in line:
            started = True
            continue
        if not started:
            continue
        m = re.match(r'\s*([\d,.]+)(?: \([ \d.]+%\))?\s+([\d,.]+)(?: \([ \d.]+%\))?\s+(\S.*)',
                     line)
        if not m:
            continue
        value = [0 if v == '.' else int(v.replace(',', '')) for v in m.group(1, 2)]
        result.append((value[0], value[1], m.group(3)))
    return result


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet under `| head`
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, ops = sys.argv[1], int(sys.argv[2])
    exclusive = rows(path, False)
    own = [r for r in exclusive if not EXCLUDED.search(r[2])]
    print('bookkeeping (own misses, without data, spin and clock): '
          '%.1f per operation (%.1f reads, %.1f writes)' %
          (sum(r[0] + r[1] for r in own) / ops, sum(r[0] for r in own) / ops,
           sum(r[1] for r in own) / ops))
    incl = rows(path, True)
    data = [r for r in exclusive if DATA.search(r[2])]  # their own misses: no double count
    data_r = sum(r[0] for r in data)
    data_w = sum(r[1] for r in data)
    for r, w, fn in incl:
        m = API.search(fn)
        if not m or m.group(1).startswith('kf_perf_'):
            continue
        # Only the call at the top of the data takes its misses out.
        if r >= data_r and w >= data_w:
            r, w = r - data_r, w - data_w
        print('%-24s %7.1f per operation (%.1f reads, %.1f writes), data excluded' %
              (m.group(1), (r + w) / ops, r / ops, w / ops))


if __name__ == '__main__':
    main()
