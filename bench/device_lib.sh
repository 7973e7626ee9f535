#!/usr/bin/env bash
# Shared steps of the device scripts (source it: `. bench/device_lib.sh`).
#
#   pa_prep DIR                    (here) sets pac to the build's pa-compile,
#                                  pa_base to the benches' pa-compile flags
#                                  (D 128, P 16, f16, joint NHD, sm_90a),
#                                  pa_g4 / pa_mha to GQA 4 (Hkv 8) / MHA
#                                  (Hkv 32), makes DIR and, unless
#                                  PA_PAIRS_ONLY=1, fills it with
#                                  bench/make_bundles.sh's decode and fp8
#                                  sets (PA_SKIP_PREFILL=1)
#   pa_header OUT                  OUT/summary.md: the GPU, driver and date
#   pa_check_bundles R DIR...      one line a bundle: the runner's check
#                                  (check-mla for mla_*, check-prefill for
#                                  prefill_* / pf_* / wg_*, else check;
#                                  --quick except MLA) and its last line
#   pa_sanitize R CHECK DIR        memcheck and racecheck (of DIR_csync where
#                                  that exists) of `R CHECK --quick
#                                  DIR` (check-mla: without --quick): their
#                                  summaries, one line each, each run cut at
#                                  PA_SANITIZE_TIMEOUT seconds (150)
#   pa_mla_checks R B RAW SEED D...  check-mla of every B/mla_* (its log in
#                                  RAW), pa_sanitize and synccheck of each
#                                  B/D, the MLA tests of test_cuda.py
#   pa_fa3_mla OUT RAW FI B L      FlashInfer's FA3 MLA at 128 heads, batches
#                                  B x lengths L (FI: the staged .gpu-fi; ""
#                                  skips), its table into OUT/summary.md
#   pa_decode_rounds R B OUT V...  `R bench` over the decode grid (B 1 / 16 /
#                                  64 / 256 x L 512 / 2048 / 8192 / 32768,
#                                  9 GiB of KV at most) for bundles B/V, two
#                                  rounds interleaved; prints B | L | Hq/Hkv
#                                  | plan | round 1 | round 2 | % read roof
#   pa_py CMD...                   CMD with the python package, the
#                                  build's runtime / pool libraries and
#                                  build/pybundles in its environment
#   pa_test_cuda [TIMEOUT] [TAIL]  python/tests/test_cuda.py whole through
#                                  pa_py (400 s, its last 12 lines)
#   pa_bench_rounds R B RAW V... -- FLAGS...
#                                  `R bench FLAGS` of bundles B/V, two
#                                  rounds interleaved, the reports into
#                                  RAW/V_1.md, RAW/V_2.md
#   pa_rounds_table RAW V...       their table: B | L | plan | round 1 us
#                                  | round 2 us | % read roof, same-bytes
#                                  read us and % of it (round 2)
#   pa_fi_decode HEADS             FlashInfer's tensor-core decode on the
#                                  same grid for the KV head counts HEADS
#                                  (e.g. 8,32), from the staged .gpu-fi
#   pa_run_init STAGED OUT         (device) sets B (STAGED/bundles), R (the
#                                  runner) and raw (a fresh folder), puts
#                                  the CUDA tools on PATH, writes
#                                  OUT/summary.md's header
#   pa_grid_table V...             pa_bench_rounds of B/V over the decode
#                                  grid (clean eviction, 9 GiB of KV at
#                                  most) into raw, then pa_rounds_table
#   pa_reassemble DIR              (here) DIR/kernels.ptx, edited by an
#                                  experiment, back into DIR/kernels.cubin
#                                  (ptxas -O3 for sm_90a, as pa-compile);
#                                  prints each kernel's registers and spills
#   pa_ptx_edit SRC DST ENTRY SED  (here) bundle SRC copied to DST with the
#                                  sed script SED applied to the lines of
#                                  kernel ENTRY in its PTX (an error when
#                                  it changes nothing), reassembled
#   pa_timeline_bundle SRC DST     (here) bundle SRC copied to DST with the
#                                  decode kernels' per-CTA timeline
#                                  (bench/ptx_timeline.py), reassembled
#   pa_timelines R B RAW OUT V "B L"...  (device) a few launches of bundle
#                                  B/V at each batch x length, the
#                                  timelines' summaries
#                                  (bench/timeline_summary.py, last launches)
#                                  into OUT/summary.md
#   pa_checks OUT SAN V...         (device, after pa_run_init: R and B)
#                                  "## checks", pa_check_bundles of B/V
#                                  and, when SAN is not empty,
#                                  pa_sanitize of `check` over B/SAN, into
#                                  OUT/summary.md
#   pa_old_new OUT SAN V...        (device, after pa_run_init) sets vs to
#                                  V_old V pairs, then pa_checks OUT SAN
#                                  of them

pa_prep() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  pac="${PA_BUILD_DIR:-$root/build}/bin/pa-compile"
  pa_base=(--head-dim 128 --page-size 16 --dtype f16 --kv joint --chip sm_90a --layout nhd)
  pa_g4=(--kv-heads 8 --group 4); pa_mha=(--kv-heads 32 --group 1)
  mkdir -p "$1"
  [[ "${PA_PAIRS_ONLY:-0}" == 1 ]] ||
    PA_SKIP_PREFILL=1 "$root/bench/make_bundles.sh" "$1" "$pac" > /dev/null
}

pa_header() {
  { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; } > "$1/summary.md"
}

pa_check_bundles() {
  local r="$1" d n c q
  shift
  for d in "$@"; do
    [[ -d "$d" ]] || continue
    n="$(basename "$d")"
    case "$n" in
      mla_*) c=check-mla ;;
      prefill_*|pf_*|wg_*) c=check-prefill ;;
      *) c=check ;;
    esac
    q=--quick; [[ $c == check-mla ]] && q=
    echo "$c $n: $(timeout 90 "$r" $c $q "$d" 2>&1 | tail -1 | cut -c1-120)"
  done
}

pa_sanitize() {
  local r="$1" c="$2" d="$3" tool q=--quick
  [[ $c == check-mla ]] && q=
  for tool in memcheck racecheck; do
    local t="$d"
    # racecheck reports hazards after the wgmma MLA kernel's bar.arrive
    # hand-offs (docs/GPU.md, "MLA decode on wgmma"): where a build of the
    # bundle with --mla-consumer-sync sits beside it (DIR_csync), racecheck
    # runs that one.
    [[ $tool == racecheck && -d "${d}_csync" ]] && t="${d}_csync"
    echo "$tool $(basename "$t"): $(timeout "${PA_SANITIZE_TIMEOUT:-150}" compute-sanitizer --tool $tool --report-api-errors no "$r" "$c" $q "$t" 2>&1 \
      | grep -E "SUMMARY|all bundles|FAIL" | sort -u | tr '\n' ' ')"
  done
}

pa_mla_checks() {
  local r="$1" b="$2" raw="$3" seed="$4" d root
  shift 4
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  timeout 300 "$r" check-mla --seed "$seed" "$b"/mla_* > "$raw/check_mla.log" 2>&1
  echo "check-mla rc $?: PASS lines $(grep -c ': PASS' "$raw/check_mla.log"), FAIL lines $(grep -c FAIL "$raw/check_mla.log")"
  grep -E "FAIL|rejected|seed|error" "$raw/check_mla.log" | head -20
  for d in "$@"; do
    PA_SANITIZE_TIMEOUT=240 pa_sanitize "$r" check-mla "$b/$d"
    echo "synccheck $d: $(timeout 240 compute-sanitizer --tool synccheck "$r" check-mla "$b/$d" 2>&1 \
      | grep -E "SUMMARY|all bundles|FAIL" | sort -u | tr '\n' ' ')"
  done
  echo "python/tests/test_cuda.py (MLA):"
  (cd "$root/python/tests" && pa_py timeout 300 python3 -c "import test_cuda as t; t.test_mla_cuda(); t.test_mla_cuda_graph(); print('MLA python tests PASS')" 2>&1 | tail -12)
}

pa_fa3_mla() {
  local out="$1" raw="$2" fi="$3" root
  [[ -n "$fi" ]] || return 0
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  eval "$(bash "$fi/kit/setup-on-device.sh" "$fi")" > /dev/null
  timeout 300 python3 "$root/bench/fi_mla_bench.py" --heads 128 --batches "$4" --lens "$5" \
    --backends fa3 --out "$raw/fi.md" > "$raw/fi.log" 2>&1
  { echo "## FlashInfer FA3 MLA"; grep -E "^\|" "$raw/fi.md"; tail -2 "$raw/fi.log"; } >> "$out/summary.md"
}

pa_decode_rounds() {
  local r="$1" b="$2" out="$3" rep v
  shift 3
  local grid=(--batches 1,16,64,256 --lens 512,2048,8192,32768 --max-kv-gib 9)
  for rep in 1 2; do
    for v in "$@"; do
      timeout 100 "$r" bench "${grid[@]}" --out "$out/d_${v}_$rep.md" "$b/$v" > /dev/null 2>&1
    done
  done
  echo "## decode: B | L | Hq/Hkv | plan | time us round 1 | time us round 2 | % read roof round 2"
  grep -m1 "read roof:" "$out/d_$1_1.md"
  for v in "$@"; do
    echo "### $v"
    paste -d'|' <(grep -E "^\| [0-9]" "$out/d_${v}_1.md" | cut -d'|' -f2-5,7) \
                <(grep -E "^\| [0-9]" "$out/d_${v}_2.md" | cut -d'|' -f7,10)
  done
  rm -f "$out"/d_*.md
}

pa_bench_rounds() {
  local r="$1" b="$2" raw="$3" rep v vs=()
  shift 3
  while [[ $# -gt 0 && "$1" != -- ]]; do vs+=("$1"); shift; done
  shift
  for rep in 1 2; do
    for v in "${vs[@]}"; do
      timeout 150 "$r" bench "$@" --out "$raw/${v}_$rep.md" "$b/$v" > /dev/null 2>&1
    done
  done
}

pa_rounds_table() {
  local raw="$1" v
  shift
  echo "## B | L | plan | r1 us | r2 us | % read roof r2 | same-bytes read us r2 | % of it"
  grep -m1 "read roof:" "$raw/$1_1.md"
  for v in "$@"; do
    echo "### $v"
    paste -d'|' <(grep -E "^\| [0-9]" "$raw/${v}_1.md" | cut -d'|' -f2,3,5,7) \
                <(grep -E "^\| [0-9]" "$raw/${v}_2.md" | cut -d'|' -f7,10,12,13)
  done
}

pa_fi_decode() {
  eval "$(bash .gpu-fi/kit/setup-on-device.sh .gpu-fi)" > /dev/null
  echo; echo "## FlashInfer tensor-core decode (Hkv $1)"
  timeout 200 python3 .gpu-fi/kit/fi_bench.py decode --batches 1,16,64,256 \
    --lens 512,2048,8192,32768 --kv-heads "$1" --paths tc --max-kv-gib 9 2>&1 | grep -E "^\| [0-9]"
}

pa_py() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  PAGEDATTN_RUNTIME="$root/build/lib/Runtime/libpa_runtime.so" \
    PAGEDATTN_POOL_LIB="$root/build/lib/Runtime/libpa_pool.so" \
    PAGEDATTN_BUNDLE_DIR="$root/build/pybundles" PYTHONPATH="$root/python" "$@"
}

pa_test_cuda() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  echo "python/tests/test_cuda.py:"
  pa_py timeout "${1:-400}" python3 "$root/python/tests/test_cuda.py" 2>&1 | tail -"${2:-12}"
}

pa_run_init() {
  B="$1/bundles"; R="$1/bin/pa-gpu-runner"
  export PATH="$PATH:/usr/local/cuda/bin"
  raw="$(mktemp -d)"
  pa_header "$2"
}

pa_grid_table() {
  pa_bench_rounds "$R" "$B" "$raw" "$@" -- --batches 1,16,64,256 \
    --lens 512,2048,8192,32768 --max-kv-gib 9 --l2-flush clean
  pa_rounds_table "$raw" "$@"
}

pa_reassemble() {
  /usr/local/cuda/bin/ptxas -arch=sm_90a -O3 -v "$1/kernels.ptx" -o "$1/kernels.cubin" 2>&1 |
    awk -v d="$1" "/rror|arning/ { print d \": \" \$0 }
      /Compiling entry function/ { f = \$7; gsub(/'/, \"\", f) }
      /bytes spill/ { s = \$0; sub(/^ */, \"\", s) }
      /Used [0-9]+ registers/ { print d \": \" f \": \" \$5 \" registers, \" s }"
  return "${PIPESTATUS[0]}"
}

pa_ptx_edit() {
  local src="$1" dst="$2" entry="$3" script="$4"
  rm -rf "$dst"; cp -r "$src" "$dst"
  sed -e "/^.visible .entry $entry(/,/^}/{ $script }" "$src/kernels.ptx" \
    > "$dst/kernels.ptx" || return 1
  if cmp -s "$src/kernels.ptx" "$dst/kernels.ptx"; then
    echo "pa_ptx_edit: $dst: the edit changed nothing" >&2
    return 1
  fi
  pa_reassemble "$dst"
}

pa_timeline_bundle() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  rm -rf "$2"; cp -r "$1" "$2"
  python3 "$root/bench/ptx_timeline.py" "$1/kernels.ptx" "$2/kernels.ptx" \
    pa_decode_split pa_decode && pa_reassemble "$2"
}

pa_timelines() {
  local r="$1" b="$2" raw="$3" out="$4" v="$5" root bl n l f
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  shift 5
  for bl in "$@"; do
    read -r n l <<<"$bl"
    f="$raw/tl_${v}_${n}x${l}.txt"
    timeout 120 "$r" bench --batches "$n" --lens "$l" --reps 3 --warmup 1 \
      --max-sets 1 --l2-flush clean "$b/$v" > "$f" 2>&1
    { echo "## timeline $v ${n} x ${l}"
      python3 "$root/bench/timeline_summary.py" "$f" | tail -9; } >> "$out/summary.md"
  done
}

pa_checks() {
  local out="$1" san="$2"
  shift 2
  {
    echo "## checks"
    pa_check_bundles "$R" "${@/#/$B/}"
    [[ -z "$san" ]] || pa_sanitize "$R" check "$B/$san"
  } >> "$out/summary.md" 2>&1
}

pa_old_new() {
  local out="$1" san="$2" v
  shift 2
  vs=()
  for v in "$@"; do vs+=("${v}_old" "$v"); done
  pa_checks "$out" "$san" "${vs[@]}"
}
