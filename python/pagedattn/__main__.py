"""python -m pagedattn prebuild OUT (--from FILE | flags...): compiles
bundles for ahead-of-time mode (PAGEDATTN_BUNDLE_DIR=OUT on a machine
without the compiler), named as the package looks them up.

  --from FILE   a Python file whose CUDA_BUNDLES (or BUNDLES) lists Configs
  otherwise     one Config from --target, --head-dim, --page-size,
                --kv-heads, --group, --layout, --dtype, --kv, --causal, ...
"""

import argparse
import dataclasses
import os
import runpy
import sys

from ._compiler import Config, compile_bundle


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m pagedattn")
    sub = ap.add_subparsers(dest="cmd", required=True)
    pb = sub.add_parser("prebuild", help="compile bundles into OUT")
    pb.add_argument("out")
    pb.add_argument("--from", dest="source")
    for f in dataclasses.fields(Config):
        flag = "--" + f.name.replace("_", "-")
        if f.type in ("bool", bool):
            pb.add_argument(flag, action="store_true")
        elif f.default is dataclasses.MISSING:
            pb.add_argument(flag, type=str if f.name == "target" else int)
        else:
            pb.add_argument(flag, type=type(f.default), default=f.default)
    a = ap.parse_args(argv)
    if a.source:
        ns = runpy.run_path(a.source)
        configs = ns.get("CUDA_BUNDLES") or ns.get("BUNDLES")
        if not configs:
            ap.error(f"{a.source} defines no CUDA_BUNDLES or BUNDLES")
    else:
        kw = {f.name: getattr(a, f.name) for f in dataclasses.fields(Config)}
        missing = [k for k, v in kw.items() if v is None]
        if missing:
            ap.error(f"missing --{', --'.join(missing)}")
        configs = [Config(**kw)]
    os.makedirs(a.out, exist_ok=True)
    for c in configs:
        d = os.path.join(a.out, c.name())
        if not os.path.exists(os.path.join(
                d, "cpu.manifest" if c.target == "cpu" else "bundle.manifest")):
            compile_bundle(c, d)
        print(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
