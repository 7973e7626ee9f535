#!/usr/bin/env bash
# Context-parallel decode (docs/ContextParallel.md) on the GPUs of one host,
# in one device call: check-cp against the float64 reference (contiguous and
# round-robin pages, every GPU and 2 GPUs), then bench-cp (1, 2, 4 GPUs;
# B = 1 and 8 at 256k and 1M tokens) into OUT/cp.md.
#
#   bench/run_cp.sh make DIR           # here: the bundle, DIR/gqa4_d128_p16_f16_nhd_joint
#   bench/run_cp.sh STAGED_DIR OUT     # device (bench/stage_gpu.sh)
#
# pa_cp_decode_run merges the devices' states with the bundle's merge
# kernel, which only `pa-compile --kernels all` bundles have: `make` compiles
# GQA 4 (Hkv 8, D 128, P 16, f16, NHD joint) that way under the name of
# bench/make_bundles.sh's decode-only bundle (same decode kernel). Stage it
# with `PA_NO_FIXTURE=1 bench/stage_gpu.sh build/gpu DIR/*`, carry
# build/gpu. PA_CP_BUNDLE overrides the bundle; PA_PARTS="check bench" (the
# default; also "chunks": one GPU's B = 1 decode under forced chunks) picks
# the parts; PAGEDATTN_NCCL, if set, is kept.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "${1:-}" == make ]]; then
  set -e
  out="${2:?usage: run_cp.sh make DIR}"
  export PATH="$PATH:/usr/local/cuda/bin"
  "${PA_BUILD_DIR:-$root/build}/bin/pa-compile" --kernels all --kv-heads 8 \
    --group 4 --head-dim 128 --page-size 16 --dtype f16 --layout nhd \
    --kv joint --chip sm_90 -o "$out/gqa4_d128_p16_f16_nhd_joint"
  exit 0
fi
gpu="${1:?usage: run_cp.sh STAGED_DIR OUT}"; out="${2:?usage: run_cp.sh STAGED_DIR OUT}"
R="$gpu/bin/pa-gpu-runner"
bundle="${PA_CP_BUNDLE:-$gpu/bundles/gqa4_d128_p16_f16_nhd_joint}"
parts=" ${PA_PARTS:-check bench} "
part() { [[ "$parts" == *" $1 "* ]]; }
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"
# NVLink multicast (NVLS) stays off on these shared hosts (it can take the
# GPUs out of service); pa_cp_decode_run's all-gather does not need it.
export NCCL_NVLS_ENABLE=0

nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader
nvidia-smi topo -m 2>/dev/null | head -12
date -u
ngpu="$(nvidia-smi -L | grep -c '^GPU')"

# libnccl.so.2: $PAGEDATTN_NCCL, else PyTorch's wheel (nvidia-nccl-cu*), else
# any libnccl.so* under torch's site-packages, else the loader's search.
find_nccl() {
  python3 - <<'EOF' 2>/dev/null
import os
try:
    import nvidia.nccl as m
    f = getattr(m, "__file__", None)
    d = os.path.dirname(f) if f else list(m.__path__)[0]
    p = os.path.join(d, "lib", "libnccl.so.2")
    if os.path.exists(p):
        print(p, "(nvidia.nccl)")
        raise SystemExit
except ImportError:
    pass
import glob, torch
site = os.path.dirname(os.path.dirname(torch.__file__))
hits = sorted(glob.glob(os.path.join(site, "**", "libnccl.so*"), recursive=True))
if hits:
    print(hits[0], "(found under " + site + ")")
EOF
}
if [[ -n "${PAGEDATTN_NCCL:-}" ]]; then
  echo "NCCL: $PAGEDATTN_NCCL (PAGEDATTN_NCCL as given)"
else
  found="$(find_nccl)"
  if [[ -n "$found" ]]; then
    export PAGEDATTN_NCCL="${found%% (*}"
    echo "NCCL: $found"
  else
    echo "NCCL: not found in PyTorch's packages; libnccl.so.2 from the loader's search"
  fi
fi
if ! grep -q '^kernel merge ' "$bundle/bundle.manifest" 2>/dev/null; then
  echo "WARNING: $bundle has no merge kernel (not a --kernels all bundle:" \
       "bench/run_cp.sh make DIR); pa_cp_decode_run refuses 2+ GPUs with it"
fi

# check-cp of every staged bundle on every GPU and on 2, with both page
# ownerships.
part check && {
  counts=("$ngpu"); (( ngpu > 2 )) && counts+=(2)
  for n in "${counts[@]}"; do
    for own in contiguous round-robin; do
      flags=(--devices "$n"); [[ "$own" == round-robin ]] && flags+=(--round-robin)
      log="$out/check_cp_${n}_${own}.log"
      timeout 240 "$R" check-cp "${flags[@]}" "$gpu"/bundles/* > "$log" 2>&1
      echo "== check-cp --devices $n $own: rc $?"
      grep -E "^device|^bundle|FAIL|FATAL|reject:|^\| |^seed" "$log" | head -40
    done
  done
  (( ngpu < 2 )) && echo "check-cp --devices 2: skipped ($ngpu GPU)"
}

# The per-device decode of a sharded B = 1 step on one GPU: the planner's
# chunk beside forced ones and a larger CTA budget (issue 14's B = 1 rows).
part chunks && {
  for flags in "" "--force-chunk 4096" "--force-chunk 2048" "--force-chunk 1024" "--ctas-per-sm 4"; do
    # shellcheck disable=SC2086
    timeout 120 "$R" bench --batches 1 --lens 65536,262144,1048576 $flags "$bundle" > "$out/chunks.log" 2>&1
    echo "== bench B=1 ${flags:-(planner)}"; grep -E "^\| *1 \|" "$out/chunks.log" | head -6
  done
}

part bench && {
  timeout 420 "$R" bench-cp --out "$out/cp.md" "$bundle" > "$out/bench_cp.log" 2>&1
  echo "== bench-cp: rc $?"
  cat "$out/cp.md" 2>/dev/null || tail -20 "$out/bench_cp.log"
}
