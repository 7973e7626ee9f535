#!/usr/bin/env bash
# The one script to run on the device machine (see docs/Runtime.md):
#
#   bench/run_gpu.sh BIN_DIR BUNDLES_DIR
#
# BIN_DIR holds pa-gpu-runner and pa-roofs.cubin (bench/stage_gpu.sh puts
# them there; if the binary cannot start on the device, it is rebuilt there
# with bench/build_runner.sh), BUNDLES_DIR one sub-directory per bundle.
#   1. `pa-gpu-runner check` on every bundle (one process each, so a
#      faulting kernel cannot take the others down);
#   2. `pa-gpu-runner bench` on the GQA-4 bundle (head_dim 128, page_size 16,
#      kv_heads 8, group 4, f16) and the MHA bundle (kv_heads 32, group 1):
#      the first match, bundles not named fixture-* first; override with
#      PA_BENCH_GQA4=DIR / PA_BENCH_MHA=DIR, extra flags in PA_BENCH_ARGS;
#      PA_BENCH_EXTRA="NAME:DIR ..." benches more bundles in the same run,
#      after each named one (e.g. the previous compiler's kernels, for an
#      old-vs-new comparison in one run): bench_NAME.md;
#   3. bench/sdpa_baseline.py (PyTorch SDPA flash + cuDNN, contiguous KV);
#   4. `pa-gpu-runner check-prefill` on every bundle with a prefill kernel
#      (`check` above runs on the bundles with a decode kernel);
#   5. `pa-gpu-runner bench-prefill` on the two causal f16 prefill bundles
#      (kv_heads 8 group 4 and kv_heads 32 group 1, head_dim 128,
#      page_size 16; override with PA_PREFILL_GQA4=DIR / PA_PREFILL_MHA=DIR,
#      extra flags in PA_PREFILL_ARGS, check flags in PA_CHECK_PREFILL_ARGS);
#   6. bench/sdpa_prefill.py (PyTorch SDPA flash + cuDNN on the same
#      prefill shapes, and the dense GEMM ceiling).
# Everything lands under $OUT (default ./gpu-out): env.txt, check.log,
# bench.log, bench_gqa4.md, bench_mha.md, sdpa.md, sdpa.log, check_prefill.log,
# bench_prefill.log, bench_prefill_gqa4.md, bench_prefill_mha.md,
# sdpa_prefill.md, sdpa_prefill.log. PA_SKIP_CHECK=1, PA_SKIP_BENCH=1,
# PA_SKIP_SDPA=1, PA_SKIP_CHECK_PREFILL=1, PA_SKIP_BENCH_PREFILL=1,
# PA_SKIP_SDPA_PREFILL=1 skip a step. Exit code non-zero if any
# check or bench failed.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$(cd "${1:?usage: run_gpu.sh BIN_DIR BUNDLES_DIR}" && pwd)"
bundles="$(cd "${2:?usage: run_gpu.sh BIN_DIR BUNDLES_DIR}" && pwd)"
out="${OUT:-$PWD/gpu-out}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
runner="$bin/pa-gpu-runner"
status=0

{
  date -u
  uname -a
  ldd --version 2>&1 | head -1
  nvidia-smi 2>&1
} >"$out/env.txt"

if ! "$runner" --help >/dev/null 2>&1; then
  echo "carried pa-gpu-runner does not start here:" | tee -a "$out/env.txt"
  "$runner" --help 2>&1 | head -3 | tee -a "$out/env.txt"
  echo "rebuilding it with bench/build_runner.sh" | tee -a "$out/env.txt"
  if "$here/build_runner.sh" /tmp/pa-runner-build >>"$out/env.txt" 2>&1; then
    runner=/tmp/pa-runner-build/pa-gpu-runner
  else
    tail -20 "$out/env.txt"
    echo "FATAL: no runnable pa-gpu-runner"
    exit 2
  fi
fi

has_kernel() { # DIR KIND: the manifest has a `kernel KIND ...` line
  grep -q "^[[:space:]]*kernel[[:space:]]\+$2[[:space:]]" "$1/bundle.manifest"
}

# 1. Correctness of every bundle.
if [[ "${PA_SKIP_CHECK:-0}" != 1 ]]; then
  : >"$out/check.log"
  for d in "$bundles"/*/; do
    d="${d%/}"
    [[ -f "$d/bundle.manifest" ]] || continue
    has_kernel "$d" decode || continue
    echo "=== check $(basename "$d")" | tee -a "$out/check.log"
    timeout 300 "$runner" check "$d" 2>&1 | tee -a "$out/check.log" || status=1
  done
fi

# 2. Benchmark of the GQA-4 and MHA bundles.
prefill_has() { # DIR KEY VALUE...: the manifest's prefill line has these pairs
  local line
  line=" $(grep -m1 '^[[:space:]]*prefill' "$1/bundle.manifest" | sed 's/#.*//') "
  shift
  while (($#)); do
    [[ "$line" =~ [[:space:]]$1[[:space:]]+$2[[:space:]] ]] || return 1
    shift 2
  done
}
config_has() { # DIR KEY VALUE...: the manifest's config line has these pairs
  local cfg
  cfg=" $(grep -m1 '^[[:space:]]*config' "$1/bundle.manifest" | sed 's/#.*//') "
  shift
  while (($#)); do
    [[ "$cfg" =~ [[:space:]]$1[[:space:]]+$2[[:space:]] ]] || return 1
    shift 2
  done
}
pick() { # KV_HEADS GROUP [KIND [PREFILL_PAIRS...]]
  local d kind="${3:-decode}"
  local extra=("${@:4}")
  for pass in real fixture; do
    for d in "$bundles"/*/; do
      d="${d%/}"
      [[ -f "$d/bundle.manifest" ]] || continue
      if [[ $pass == real ]]; then [[ "$(basename "$d")" != fixture-* ]] || continue
      else [[ "$(basename "$d")" == fixture-* ]] || continue; fi
      has_kernel "$d" "$kind" || continue
      if ((${#extra[@]})) && ! prefill_has "$d" "${extra[@]}"; then continue; fi
      if config_has "$d" head_dim 128 page_size 16 kv_heads "$1" group "$2" dtype f16; then
        echo "$d"
        return
      fi
    done
  done
}
if [[ "${PA_SKIP_BENCH:-0}" != 1 ]]; then
  : >"$out/bench.log"
  gqa4="${PA_BENCH_GQA4:-$(pick 8 4)}"
  mha="${PA_BENCH_MHA:-$(pick 32 1)}"
  pairs=("gqa4:$gqa4" "mha:$mha")
  # shellcheck disable=SC2206
  pairs+=(${PA_BENCH_EXTRA:-})
  for pair in "${pairs[@]}"; do
    name="${pair%%:*}" dir="${pair#*:}"
    if [[ -z "$dir" ]]; then
      echo "=== bench $name: no bundle with that configuration" | tee -a "$out/bench.log"
      continue
    fi
    echo "=== bench $name: $dir" | tee -a "$out/bench.log"
    # shellcheck disable=SC2086
    timeout 400 "$runner" bench ${PA_BENCH_ARGS:-} --out "$out/bench_$name.md" "$dir" \
      2>&1 | tee -a "$out/bench.log" || status=1
  done
fi

# 3. PyTorch SDPA on the same shapes.
if [[ "${PA_SKIP_SDPA:-0}" != 1 ]]; then
  timeout 400 python3 "$here/sdpa_baseline.py" --out "$out/sdpa.md" 2>&1 |
    tee "$out/sdpa.log" || echo "sdpa_baseline.py failed (see sdpa.log)"
fi

# 4. Correctness of every prefill bundle.
if [[ "${PA_SKIP_CHECK_PREFILL:-0}" != 1 ]]; then
  : >"$out/check_prefill.log"
  for d in "$bundles"/*/; do
    d="${d%/}"
    [[ -f "$d/bundle.manifest" ]] || continue
    has_kernel "$d" prefill || continue
    echo "=== check-prefill $(basename "$d")" | tee -a "$out/check_prefill.log"
    # shellcheck disable=SC2086
    timeout 400 "$runner" check-prefill ${PA_CHECK_PREFILL_ARGS:-} "$d" 2>&1 |
      tee -a "$out/check_prefill.log" || status=1
  done
fi

# 5. Prefill benchmark of the causal GQA-4 and MHA prefill bundles.
if [[ "${PA_SKIP_BENCH_PREFILL:-0}" != 1 ]]; then
  : >"$out/bench_prefill.log"
  pgqa4="${PA_PREFILL_GQA4:-$(pick 8 4 prefill causal 1 window 0)}"
  pmha="${PA_PREFILL_MHA:-$(pick 32 1 prefill causal 1 window 0)}"
  for pair in "gqa4:$pgqa4" "mha:$pmha"; do
    name="${pair%%:*}" dir="${pair#*:}"
    if [[ -z "$dir" ]]; then
      echo "=== bench-prefill $name: no causal f16 prefill bundle with that configuration" |
        tee -a "$out/bench_prefill.log"
      continue
    fi
    echo "=== bench-prefill $name: $dir" | tee -a "$out/bench_prefill.log"
    # shellcheck disable=SC2086
    timeout 400 "$runner" bench-prefill ${PA_PREFILL_ARGS:-} \
      --out "$out/bench_prefill_$name.md" "$dir" 2>&1 |
      tee -a "$out/bench_prefill.log" || status=1
  done
fi

# 6. PyTorch SDPA on the prefill shapes.
if [[ "${PA_SKIP_SDPA_PREFILL:-0}" != 1 ]]; then
  timeout 400 python3 "$here/sdpa_prefill.py" --out "$out/sdpa_prefill.md" 2>&1 |
    tee "$out/sdpa_prefill.log" || echo "sdpa_prefill.py failed (see sdpa_prefill.log)"
fi

# Summary last (the tail of the output is what comes back first).
echo
echo "================ summary ================"
for f in "$out/sdpa.md" "$out"/bench_*.md "$out/sdpa_prefill.md"; do
  [[ -f "$f" ]] && { cat "$f"; echo; }
done
for f in "$out/check.log" "$out/check_prefill.log"; do
  [[ -f "$f" ]] && grep -E '^(=== check|\| |seed |  FATAL)' "$f"
done
echo "run_gpu.sh: $([[ $status == 0 ]] && echo "all checks and benches passed" || echo "FAILURES (exit $status)")"
exit $status
