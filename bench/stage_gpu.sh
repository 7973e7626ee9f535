#!/usr/bin/env bash
# Stages what the device machine needs into one folder to carry: the built
# pa-gpu-runner + pa-roofs.cubin, the two fixture bundles (GQA 4 and MHA
# from bench/fixture/naive_decode.cu) and any given bundle directories
# (copied whole: every binary the manifest names, e.g. prefill_short.cubin
# beside kernels.cubin).
#
#   bench/stage_gpu.sh DEST [BUNDLE_DIR...]
#
# DEST should be an ignored path (e.g. build/gpu, under the ignored build/),
# carried with the device call: carry ["build/gpu"], command
# "bench/run_gpu.sh build/gpu/bin build/gpu/bundles". PA_NO_FIXTURE=1 skips
# the fixture bundles.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:?usage: stage_gpu.sh DEST [BUNDLE_DIR...]}"
shift
build="${PA_BUILD_DIR:-$root/build}"
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/bundles"
cp "$build/bin/pa-gpu-runner" "$build/bin/pa-roofs.cubin" "$dest/bin/"
if [[ "${PA_NO_FIXTURE:-0}" != 1 ]]; then
  "$root/bench/fixture/make_bundle.sh" "$dest/bundles/fixture-gqa4" 8 4
  "$root/bench/fixture/make_bundle.sh" "$dest/bundles/fixture-mha" 32 1
fi
for b in "$@"; do
  [[ -f "$b/bundle.manifest" ]] || { echo "not a bundle: $b" >&2; exit 1; }
  # Every binary the manifest names must be there.
  while read -r _ _ file _; do
    [[ -f "$b/$file" ]] || { echo "bundle $b: missing $file" >&2; exit 1; }
  done < <(grep '^kernel ' "$b/bundle.manifest")
  cp -r "$b" "$dest/bundles/$(basename "$b")"
done
du -sh "$dest"
ls "$dest/bundles"
