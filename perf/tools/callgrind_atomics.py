#!/usr/bin/python3
"""Counts the atomic instructions a callgrind profile executed.

Usage: callgrind_atomics.py <callgrind.out file> [operations]

The profile must be taken with --dump-instr=yes (per-instruction counts).
Each executed instruction with a lock prefix, an xchg with a memory operand
(implicitly locked) or an mfence is counted, by function; with `operations`
the counts are divided by it (e.g. per all_reduce). Atomic instructions
drain the store buffer and may pull a cache line from another core, so on a
short operation they cost more than their number suggests; callgrind counts
them exactly and repeatably. Uses objdump (binutils). x86-64 only.
"""
import collections
import re
import signal
import subprocess
import sys


def executed(path):
    """{(object, address): Ir count} and {(object, address): function}.

    Reads the callgrind format with or without compressed names ("fn=(3)")
    and positions ("+4", "-2", "*": relative to the last cost line's
    address). The line after calls=, jump= or jcnd= gives the call or jump
    site: it is neither an instruction's cost nor a new reference address."""
    counts = collections.defaultdict(int)
    fn_of = {}
    names = {}  # (kind, id) -> name
    ob = fn = None
    addr = 0
    npos = 1       # position columns before the costs
    ir_col = 0     # Ir among the cost columns
    skip_next = False

    def name(kind, value):
        m = re.match(r'\((\d+)\)\s*(.*)', value)
        if not m:
            return value
        if m.group(2):
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), value)

    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('positions:'):
                pos = line.split()[1:]
                if not pos or pos[0] != 'instr':
                    sys.exit('no per-instruction counts: profile with --dump-instr=yes')
                npos = len(pos)
            elif line.startswith('events:'):
                events = line.split()[1:]
                if 'Ir' not in events:
                    sys.exit('the profile has no Ir (instructions) event')
                ir_col = events.index('Ir')
            elif line.startswith('ob='):
                ob = name('ob', line[3:])
            elif line.startswith('fn='):
                fn = name('fn', line[3:])
            elif line.startswith('cob='):
                name('ob', line[4:])
            elif line.startswith(('cfn=', 'jfn=')):
                name('fn', line[4:])
            elif line.startswith(('calls=', 'jump=', 'jcnd=')):
                skip_next = True
            elif line and (line[0] in '+-*' or line.startswith('0x')):
                if skip_next:
                    skip_next = False
                    continue
                fields = line.split()
                pos = fields[0]
                if pos.startswith('0x'):
                    addr = int(pos, 16)  # absolute
                elif pos != '*':
                    addr += int(pos, 0)  # relative: +N or -N
                costs = fields[npos:]
                ir = int(costs[ir_col]) if ir_col < len(costs) else 0
                counts[(ob, addr)] += ir
                fn_of[(ob, addr)] = fn
    return counts, fn_of


def is_atomic(ins):
    return ins.startswith('lock') or (ins.startswith('xchg') and '(' in ins) or 'mfence' in ins


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # (quiet under `| head`)
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    counts, fn_of = executed(sys.argv[1])
    if not counts:
        sys.exit('no per-instruction counts: profile with --dump-instr=yes')
    by_site = collections.defaultdict(int)
    total = 0
    for ob in {o for o, _ in counts}:
        run = subprocess.run(['objdump', '-d', '--no-show-raw-insn', ob],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print('(not disassembled: %s)' % ob, file=sys.stderr)
            continue
        dump = run.stdout
        for line in dump.splitlines():
            m = re.match(r'\s*([0-9a-f]+):\s+(.*)', line)
            if not m:
                continue
            key = (ob, int(m.group(1), 16))
            ins = m.group(2)
            if key in counts and is_atomic(ins):
                mnemonic = ' '.join(ins.split()[:2])
                by_site[(fn_of[key][:100], mnemonic)] += counts[key]
                total += counts[key]
    print('atomic instructions: %.2f%s' % (total / per, ' per operation' if per > 1 else ''))
    for (fn, ins), n in sorted(by_site.items(), key=lambda kv: -kv[1]):
        if n / per >= 0.01:
            print('%8.2f  %-24s %s' % (n / per, ins, fn))


if __name__ == '__main__':
    main()
