B=build/gpu/bundles; R=build/gpu/bin/pa-gpu-runner
nvidia-smi --query-gpu=name --format=csv,noheader
for n in $(ls $B); do
  timeout 120 $R bench-cascade --no-plain --merge-rows 1 --reps 20 --cases 8192:256:256,32768:256:64,32768:256:256 --out $OUT/$n.md $B/$n > /dev/null 2>&1
  echo "== $n"; grep -E "^\| [0-9]" $OUT/$n.md
done
