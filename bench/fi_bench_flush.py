#!/usr/bin/env python3
"""The FlashInfer kit's fi_bench.py with a choice of L2 eviction (pa-gpu-runner's --l2-flush).

The kit (staged into the git-ignored .gpu-fi/kit/fi_bench.py) evicts the L2 before every timed
call by zeroing a 256 MiB buffer (`Ctx.time`: `self.flush.zero_()`). That leaves the L2 full of
dirty lines, which the timed call writes back to device memory as its own reads evict them: up
to the L2's size (60 MiB on an H200) of writes on top of the call's traffic, a fixed cost that
weighs on calls of a few hundred MB and less. pa-gpu-runner's `--l2-flush clean` follows the
memset with a read pass over the buffer instead, so the call starts with clean lines of another
buffer. This script runs the kit unchanged except for that: with `--l2-flush clean` the kit's
flush buffer is wrapped so that its zero_() is followed by a read of the whole buffer (a
torch max over its int64 view, enqueued on the same stream, not timed); `--l2-flush dirty` (the
default) is the kit as it is. Every other argument goes to the kit.

  python3 bench/fi_bench_flush.py --l2-flush clean decode --batches 1,64 --lens 2048,32768 \
      --kv-heads 8 --paths tc --max-kv-gib 9
"""

import argparse
import importlib.util
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class CleanFlush:
    """Stands in for the kit's flush tensor: zero_() writes it, then reads it all back."""

    def __init__(self, t):
        import torch

        self.t = t
        self.words = t.view(torch.int64)

    def zero_(self):
        self.t.zero_()
        self.words.max()  # a read pass: the dirty lines are written back here, untimed
        return self.t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 add_help=False)
    ap.add_argument("--l2-flush", choices=["dirty", "clean"], default="dirty")
    ap.add_argument("--kit", default=os.path.join(REPO, ".gpu-fi", "kit", "fi_bench.py"))
    a, rest = ap.parse_known_args()
    if not os.path.isfile(a.kit):
        sys.exit(f"fi_bench_flush.py: no FlashInfer kit at {a.kit} (stage it: see bench/device_lib.sh)")
    spec = importlib.util.spec_from_file_location("fi_bench", a.kit)
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    if a.l2_flush == "clean":
        init = kit.Ctx.__init__

        def clean_init(self, args):
            init(self, args)
            self.flush = CleanFlush(self.flush)

        kit.Ctx.__init__ = clean_init
    print(f"L2 eviction: --l2-flush {a.l2_flush}", flush=True)
    sys.argv = [a.kit] + rest
    return kit.main()


if __name__ == "__main__":
    sys.exit(main())
