#!/usr/bin/env python3
"""Instruments one kernel of a bundle's PTX with a per-CTA timeline (an
experiment's tool, issue 9: where a split decode's time goes).

    ptx_timeline.py IN.ptx OUT.ptx ENTRY...

Thread 0 of every CTA of each ENTRY records %globaltimer at the kernel's start
(t0), when its first cp.async.wait_group returns (t1: the first K / V tile
is in), at its first membar.gl (t2: the KV loop and the partial stores
done; 0 in a kernel without one), at its first bar.red (t3: the arrival
done), and at ret (t4), and prints one line at ret through vprintf:

    T ctaid.x ctaid.y smid t0 t1 t2 t3 t4

The instrumentation adds registers and a printf; the timeline's shape, not
its absolute times, is the point. Every plain `ret;` prints; a predicated
one (`@%p ret;`) is left alone, so a CTA leaving through one prints
nothing.
"""
import re
import sys


def main():
    src, dst, entries = sys.argv[1], sys.argv[2], sys.argv[3:]
    lines = open(src).read().split("\n")
    out = []
    inside = False
    fmt = "T %u %u %u %llu %llu %llu %llu %llu\n"
    fmt_bytes = ",".join(str(b) for b in fmt.encode()) + ",0"
    decl = [
        ".extern .func (.param .b32 func_retval0) vprintf (.param .b64 "
        "vprintf_param_0, .param .b64 vprintf_param_1);",
        f".global .align 1 .b8 pa_tl_fmt[{len(fmt.encode()) + 1}] = "
        f"{{{fmt_bytes}}};",
    ]
    inserted_decl = False
    rets = 0
    regs_done = False
    done = []
    for i, line in enumerate(lines):
        if not inserted_decl and line.startswith(".visible .entry"):
            out.extend(decl)
            inserted_decl = True
        m = re.match(r"\.visible \.entry (\w+)\(", line)
        if m and m.group(1) in entries:
            inside = True
            regs_done = False
            seen_membar = seen_red = False
            done.append(m.group(1))
        if inside and line == "}":
            inside = False
        if not inside:
            out.append(line)
            continue
        s = line.strip()
        if not regs_done and s.startswith(".reg .b64"):
            out.append(line)
            out += [
                "\t.reg .b64 \t%tl<8>;",
                "\t.reg .b32 \t%tlr<4>;",
                "\t.reg .pred \t%tlp<2>;",
                "\t.local .align 8 .b8 \tpa_tl_buf[56];",
                "\tmov.u64 \t%tl0, %globaltimer;",
                "\tmov.u64 \t%tl1, 0;",
                "\tmov.u64 \t%tl2, 0;",
                "\tmov.u64 \t%tl3, 0;",
            ]
            regs_done = True
            continue
        if s.startswith("cp.async.wait_group"):
            out.append(line)
            out += [
                "\tsetp.eq.u64 \t%tlp0, %tl1, 0;",
                "\t@%tlp0 mov.u64 \t%tl1, %globaltimer;",
            ]
            continue
        if s.startswith("membar.gl") and not seen_membar:
            seen_membar = True
            out.append("\tmov.u64 \t%tl2, %globaltimer;")
        if s.startswith("bar.red") and not seen_red:
            seen_red = True
            out.append("\tmov.u64 \t%tl3, %globaltimer;")
        if s == "ret;":
            rets += 1
            skip = f"$L__tl_skip{rets}"
            out += [
                "\tmov.u64 \t%tl4, %globaltimer;",
                "\tmov.u32 \t%tlr0, %tid.x;",
                "\tsetp.ne.u32 \t%tlp1, %tlr0, 0;",
                f"\t@%tlp1 bra \t{skip};",
                "\tmov.u32 \t%tlr1, %ctaid.x;",
                "\tst.local.u32 \t[pa_tl_buf], %tlr1;",
                "\tmov.u32 \t%tlr1, %ctaid.y;",
                "\tst.local.u32 \t[pa_tl_buf+4], %tlr1;",
                "\tmov.u32 \t%tlr1, %smid;",
                "\tst.local.u32 \t[pa_tl_buf+8], %tlr1;",
                "\tst.local.u64 \t[pa_tl_buf+16], %tl0;",
                "\tst.local.u64 \t[pa_tl_buf+24], %tl1;",
                "\tst.local.u64 \t[pa_tl_buf+32], %tl2;",
                "\tst.local.u64 \t[pa_tl_buf+40], %tl3;",
                "\tst.local.u64 \t[pa_tl_buf+48], %tl4;",
                "\tmov.u64 \t%tl5, pa_tl_fmt;",
                "\tcvta.global.u64 \t%tl5, %tl5;",
                "\tmov.u64 \t%tl6, pa_tl_buf;",
                "\tcvta.local.u64 \t%tl6, %tl6;",
                "\t{",
                "\t.param .b64 tl_p0;",
                "\tst.param.b64 \t[tl_p0], %tl5;",
                "\t.param .b64 tl_p1;",
                "\tst.param.b64 \t[tl_p1], %tl6;",
                "\t.param .b32 tl_ret;",
                "\tcall.uni (tl_ret), vprintf, (tl_p0, tl_p1);",
                "\t}",
                f"{skip}:",
            ]
        out.append(line)
    if sorted(done) != sorted(entries):
        sys.exit(f"entries {entries}: found {done}")
    open(dst, "w").write("\n".join(out))


if __name__ == "__main__":
    main()
