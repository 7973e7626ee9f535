#!/usr/bin/env bash
# The hardening run (docs/Fuzzing.md): an AddressSanitizer +
# UndefinedBehaviorSanitizer build of the libraries, the unit tests and the
# libFuzzer targets in build-san/ (clang-22, source-based coverage on), then
#   1. the GoogleTest unit tests under the sanitizers (ctest, lit excluded);
#   2. each fuzz target for PA_FUZZ_SECONDS (default 45) from the checked-in
#      corpus fuzz/corpus/<target>/ (a per-input timeout of 10 s: a hang is
#      a finding);
#   3. the coverage of lib/ by the checked-in corpus (llvm-cov).
# Exits non-zero on any test failure, crash, hang, leak or sanitizer report.
#
#   scripts/sanitize.sh                      # CI (scripts/test.sh calls it)
#   PA_SAN_JOBS=1 PA_FUZZ_SECONDS=60 scripts/sanitize.sh
#   scripts/sanitize.sh --regenerate-corpus  # re-seed + minimize fuzz/corpus
#
# Environment: PA_SAN_BUILD_DIR (build-san), PA_SAN_JOBS (ninja -j, default
# nproc; the build runs under nice), PA_FUZZ_SECONDS, PA_FUZZ_SEED (libFuzzer
# -seed; default: libFuzzer picks one and prints it), PA_SAN_SKIP_UNIT=1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
san="${PA_SAN_BUILD_DIR:-$root/build-san}"
jobs="${PA_SAN_JOBS:-$(nproc)}"
seconds="${PA_FUZZ_SECONDS:-45}"
targets=(pa-ir-fuzz pa-runtime-fuzz pa-manifest-fuzz)
regenerate=0
[ "${1:-}" = "--regenerate-corpus" ] && regenerate=1
start=$(date +%s)

pkgs=(clang-22 libclang-rt-22-dev llvm-22)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "sanitize: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
llvm_bin=/usr/lib/llvm-22/bin

if [ ! -f "$san/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # -O1 with line tables: usable stacks, quick enough to compile and run.
  # NDEBUG as in Debian's LLVM (assertions off), so that LLVM's headers see
  # the same configuration as libLLVM.so / libMLIR.so.
  cmake -G Ninja -S "$root" -B "$san" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    "${launcher[@]}" \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only -DNDEBUG" \
    "-DCMAKE_C_FLAGS_RELEASE=-O1 -gline-tables-only -DNDEBUG" \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DPA_SANITIZE=address,undefined -DPA_ENABLE_FUZZ=ON -DPA_COVERAGE=ON
fi

# The unit tests that run under the sanitizers, the CPU differential tests
# included: they JIT-run the lowered CPU programs, so LeakSanitizer checks
# that those free every buffer they allocate (docs/Fuzzing.md, finding 2).
unit=(PAReferenceTests PARuntimeHostTests PARuntimeBundleTests
      PARunnerOptionsTests PAPoolTests PATestSupportTests
      PACPUDifferentialTests)
nice -n 10 ninja -C "$san" -j"$jobs" "${unit[@]}" "${targets[@]}"
build_done=$(date +%s)

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$root/fuzz/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export ASAN_SYMBOLIZER_PATH="$llvm_bin/llvm-symbolizer"
prof="$san/profiles"
rm -rf "$prof"; mkdir -p "$prof"
# Every instrumented binary writes a profile; the unit tests' go aside.
export LLVM_PROFILE_FILE="$prof/unit-%p.profraw"

status=0
if [ "${PA_SAN_SKIP_UNIT:-0}" != 1 ]; then
  echo "sanitize: unit tests under ASan + UBSan"
  # Every discovered GoogleTest of the executables built above; lit (not
  # built here) and the unbuilt executables' placeholders are excluded.
  (cd "$san" && ctest --output-on-failure -j"$jobs" \
    -E '^lit$|_NOT_BUILT$') \
    || status=1
fi
unit_done=$(date +%s)

if ((regenerate)); then
  # The seeds (the modules of examples/ and the CPU path's lit tests; the
  # manifests of the main build's tests) merged with the corpus checked in:
  # -merge=1 on edge coverage alone keeps a small subset with the same
  # edges. The finds of fuzz runs are not added (docs/Fuzzing.md, "The
  # corpus"); reproducers of findings (regression-*) are always kept.
  seeds="$san/fuzz-seeds"; rm -rf "$seeds"; mkdir -p "$seeds"
  python3 "$root/fuzz/split_seeds.py" "$seeds/ir"
  for t in "${targets[@]}"; do
    mkdir -p "$seeds/$t-new" "$root/fuzz/corpus/$t"
    extra=()
    [ "$t" = pa-ir-fuzz ] && extra=("$seeds/ir")
    if [ "$t" = pa-manifest-fuzz ]; then
      # The manifests pa-compile wrote in the main build's tests.
      mkdir -p "$seeds/manifest"
      find "${PA_BUILD_DIR:-$root/build}" -name bundle.manifest -size -16k \
        | while read -r f; do
            cp "$f" "$seeds/manifest/$(sha1sum "$f" | cut -c1-40)"
          done
      extra=("$seeds/manifest")
    fi
    LLVM_PROFILE_FILE=/dev/null "$san/bin/$t" -merge=1 -use_counters=0 \
      -use_cmp=0 -timeout=10 "$seeds/$t-new" "$root/fuzz/corpus/$t" \
      "${extra[@]}" 2>&1 | tail -n 1
    cp "$root/fuzz/corpus/$t"/regression-* "$seeds/$t-new/" 2>/dev/null || true
    rm -rf "$root/fuzz/corpus/$t"
    mv "$seeds/$t-new" "$root/fuzz/corpus/$t"
  done
fi

# Fuzzing: new inputs go to a scratch copy of the corpus (build-san/
# fuzz-work), crashes to build-san/fuzz-artifacts/.
summary=()
for t in "${targets[@]}"; do
  work="$san/fuzz-work/$t"; art="$san/fuzz-artifacts/$t/"
  rm -rf "$work" "$art"; mkdir -p "$work" "$art"
  seed=()
  [ -n "${PA_FUZZ_SEED:-}" ] && seed=(-seed="$PA_FUZZ_SEED")
  maxlen=4096 # the targets' own bounds (IR 4 KiB, manifests 16 KiB)
  [ "$t" = pa-manifest-fuzz ] && maxlen=16384
  log="$san/fuzz-$t.log"
  echo "sanitize: fuzzing $t for ${seconds}s (log: $log)"
  rc=0
  LLVM_PROFILE_FILE=/dev/null "$san/bin/$t" "${seed[@]}" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -max_len="$maxlen" -print_final_stats=1 -artifact_prefix="$art" \
    "$work" "$root/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  used=$(grep -m1 -o 'INFO: Seed: [0-9]*' "$log" || true)
  if [ "$rc" -ne 0 ] || ls "$art" | grep -q .; then
    echo "sanitize: $t FAILED (exit $rc, $used); last lines of $log:"
    tail -n 40 "$log"
    ls -l "$art"
    status=1
  fi
  summary+=("$t: ${runs:-?} inputs run in ${seconds}s, exit $rc ($used)")
done
fuzz_done=$(date +%s)

# Coverage of lib/ by the checked-in corpus: every corpus input once.
for t in "${targets[@]}"; do
  LLVM_PROFILE_FILE="$prof/$t-%p.profraw" "$san/bin/$t" -runs=0 \
    -timeout=10 "$root/fuzz/corpus/$t" >"$san/coverage-$t.log" 2>&1 || {
    echo "sanitize: $t over its corpus FAILED"; tail -n 40 "$san/coverage-$t.log"
    status=1; }
done
"$llvm_bin/llvm-profdata" merge -sparse -o "$prof/fuzz.profdata" \
  "$prof"/pa-*-fuzz-*.profraw
"$llvm_bin/llvm-cov" export -summary-only "$san/bin/pa-ir-fuzz" \
  -object "$san/bin/pa-runtime-fuzz" -object "$san/bin/pa-manifest-fuzz" \
  -object "$san/lib/Runtime/libpa_pool.so" \
  -instr-profile="$prof/fuzz.profdata" >"$san/coverage.json"
echo "sanitize: lines of lib/ run by the checked-in corpus"
python3 "$root/fuzz/coverage_summary.py" "$san/coverage.json" "$root" \
  | tee "$san/coverage.txt"

end=$(date +%s)
echo "sanitize: build $((build_done - start))s, unit tests $((unit_done - build_done))s, fuzzing $((fuzz_done - unit_done))s, total $((end - start))s"
for s in "${summary[@]}"; do echo "sanitize: $s"; done
if [ "$status" -ne 0 ]; then
  echo "sanitize: FAILED"
  exit 1
fi
echo "sanitize: OK (0 crashes, 0 hangs, 0 sanitizer reports)"
