#!/usr/bin/env python3
"""Counts the heap buffers of each function of memref-form MLIR (stdin) and
checks that every one is freed or returned.

Per func.func, in textual order: `%x = memref.alloc(` (allocs),
`memref.dealloc %x` (deallocs) and the operands of `return` (results). Prints

    @fn: A alloc, D dealloc, R returned, L leaked

and one line per problem: an alloc neither deallocated nor returned
(LEAK), a dealloc of a value no memref.alloc of the function defines (a
function argument, that is the caller's buffer, or a view: FREES NON-ALLOC),
a buffer deallocated twice or deallocated and returned. Exits 1 if there is
any problem or no function was found. The count is static (an alloc inside a
loop counts once), which is what the lowering's structure needs: each alloc
is freed in the block that allocates it or handed to the caller.

Feed it the IR after convert-pa-to-loops (the last pass before which every
buffer is still a memref.alloc), e.g.

    pa-opt f.mlir -pa-lower-to-cpu=... -mlir-print-ir-after=convert-pa-to-loops \
        -o /dev/null 2>&1 | buffer_balance.py
"""

import re
import sys

FUNC = re.compile(r"^\s*func\.func\s+(?:private\s+)?@([\w$.]+)")
ALLOC = re.compile(r"^\s*(%[\w$.#-]+)\s*=\s*memref\.alloc\(")
DEALLOC = re.compile(r"\bmemref\.dealloc\s+(%[\w$.#-]+)")
RETURN = re.compile(r"^\s*(?:func\.)?return\s+([^:]*)")


def main() -> int:
    funcs = []  # (name, allocs, deallocs, returned)
    cur = None
    for line in sys.stdin:
        m = FUNC.match(line)
        if m:
            cur = (m.group(1), [], [], [])
            funcs.append(cur)
            continue
        if cur is None:
            continue
        m = ALLOC.match(line)
        if m:
            cur[1].append(m.group(1))
        for d in DEALLOC.findall(line):
            cur[2].append(d)
        m = RETURN.match(line)
        if m:
            cur[3].extend(v.strip() for v in m.group(1).split(",") if v.strip())

    if not funcs:
        print("buffer_balance: no func.func in the input")
        return 1
    problems = 0
    for name, allocs, deallocs, returned in funcs:
        alloc_set = set(allocs)
        ret_allocs = [v for v in returned if v in alloc_set]
        leaked = [a for a in allocs if a not in deallocs and a not in returned]
        print(f"@{name}: {len(allocs)} alloc, {len(deallocs)} dealloc, "
              f"{len(set(ret_allocs))} returned, {len(leaked)} leaked")
        for a in leaked:
            print(f"  LEAK: {a} is neither deallocated nor returned")
        seen = set()
        for d in deallocs:
            if d not in alloc_set:
                print(f"  FREES NON-ALLOC: memref.dealloc {d} (not a "
                      f"memref.alloc of @{name})")
                problems += 1
            elif d in seen:
                print(f"  DOUBLE DEALLOC: {d}")
                problems += 1
            elif d in returned:
                print(f"  FREES RETURNED: {d}")
                problems += 1
            seen.add(d)
        problems += len(leaked)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
