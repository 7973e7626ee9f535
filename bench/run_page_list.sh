#!/usr/bin/env bash
# Page lists in shared memory (pa-promote-tiles page-list-rounds, issue 8):
# compute-sanitizer and an A/B timing at head dim 256, in one device call
# after bench/make_bundles.sh (its *_pagelist / *_w4kv64 bundles) and
#   bench/run_page_list.sh make DIR        # here: D 256 GQA 4 causal, with
#                                          # the page list (rounds 8 > 8) and
#                                          # without (--page-list-rounds 0)
#   bench/run_page_list.sh run STAGED OUT  # device (bench/stage_gpu.sh)
# PA_PARTS="sanitize bench" picks the parts, PA_TOOLS the sanitizer tools.
set -uo pipefail
what="${1:?usage: run_page_list.sh make|run ...}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ "$what" == make ]]; then
  set -e
  out="${2:?DIR}"
  export PATH="$PATH:/usr/local/cuda/bin"
  for v in "list:" "regs:--page-list-rounds 0"; do
    # shellcheck disable=SC2086
    "${PA_BUILD_DIR:-$root/build}/bin/pa-compile" --kernels prefill \
      --kv-heads 8 --group 4 --head-dim 256 --page-size 16 --dtype f16 \
      --layout nhd --kv joint --causal ${v#*:} --chip sm_90 \
      -o "$out/pf256_${v%%:*}"
  done
  exit 0
fi
gpu="${2:?STAGED dir}"; out="${3:?OUT dir}"
B="$gpu/bundles"; R="$gpu/bin/pa-gpu-runner"
export PATH="$PATH:/usr/local/cuda/bin"
parts=" ${PA_PARTS:-sanitize bench} "
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u
if [[ "$parts" == *" sanitize "* ]]; then
  for tool in ${PA_TOOLS:-memcheck racecheck synccheck}; do
    for d in "$B"/prefill_*pagelist* "$B"/prefill_*_w4kv64 \
             "$B"/prefill_g4_d256_p1_f16_nhd_joint_window_none; do
      [[ -d "$d" ]] || continue
      extra=(); [[ "$tool" == memcheck ]] && extra=(--report-api-errors no)
      echo "== $tool $(basename "$d"): $(timeout 150 compute-sanitizer --tool "$tool" "${extra[@]}" "$R" check-prefill --quick --seeds 1 "$d" 2>&1 \
        | grep -E "SUMMARY|all bundles|FAIL|Race|rror" | sort -u | tr '\n' ' ')"
    done
  done
fi
if [[ "$parts" == *" bench "* ]]; then
  for rep in 1 2; do
    for n in list regs; do
      timeout 150 "$R" bench-prefill --kernel prefill --out "$out/pf256_${n}_$rep.md" "$B/pf256_$n" > /dev/null 2>&1
      echo "== pf256_$n (rep $rep)"; grep -E "^\| (causal|append)" "$out/pf256_${n}_$rep.md"
    done
  done
fi
