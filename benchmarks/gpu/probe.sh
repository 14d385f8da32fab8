#!/usr/bin/env bash
# vitbench on a lent GPU, in phases named on the command line (all but kernels and timm by default):
#   memprobe selftest tests bare profile compile launcher calibrate predict report kernels timm traces
# Each phase has its own time limit and its log under $OUT/gpu/; everything is packed into
# $OUT/gpu.tar.gz at the end (the device tool brings back at most 8 files).
#   bash benchmarks/gpu/probe.sh selftest tests bare calibrate
# The issue-48 run, one 8-minute call (phase limits 100 + 180 + 150 + 35 = 465 s; README.md here):
#   bash benchmarks/gpu/probe.sh kernels calibrate predict timm
# traces: a training step traced without the GPU (in-thread backward) against with it (trace_parity.py).
# CAL=FILE names a GPU calibration for `predict` (default: the one `calibrate` wrote).
# Phase limits in seconds: KERNELS_S CALIBRATE_S PREDICT_S TIMM_S REPORT_S TRACES_S. KERNELS_DEVICE=cpu and
# KERNELS_ARGS (kernel_records.py options: --config M,MODE,B,P --limit N --start N --batch-size N
# --resume) for a CPU check or to go on in a second call; TIMM_START=N starts timm at case N.
set -u
# the cache in the checkout's ignored tmp/, kept between calls on a warm machine: a calibrate phase stopped by its
# time limit keeps each step it measured there (*.measuring.json), and `calibrate` in the next call resumes from them
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg KINETO_LOG_LEVEL=5 VITBENCH_CACHE_DIR=${VITBENCH_CACHE_DIR:-$PWD/tmp/vitbench-cache}
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONPATH=${PYTHONPATH:-$PWD}
OUT=${OUT:-/tmp/out}
LOGS=${LOGS:-/tmp/gpu-logs}
L=$LOGS/gpu   # packed into $OUT/gpu.tar.gz: the tool brings back at most 8 files
mkdir -p "$L" "$OUT"
pack() { tar -czf "$OUT/gpu.tar.gz" -C "$LOGS" gpu && echo "packed $(du -sh "$OUT/gpu.tar.gz" | cut -f1)"; }
trap pack EXIT
V="python3 -m vitbench"
CAL=${CAL:-$L/gpu_calibration.json}
phase() { echo "=== $1 ($(date +%T))" | tee -a "$L/phases.txt"; }
run() {  # run NAME SECONDS COMMAND...: the command's output to $L/NAME.txt, its exit code to phases.txt
  local name=$1 limit=$2; shift 2
  phase "$name"
  local t0=$SECONDS
  timeout "$limit" "$@" >"$L/$name.txt" 2>&1
  local rc=$?
  echo "    $name: rc=$rc in $((SECONDS - t0)) s" | tee -a "$L/phases.txt"
  tail -n 25 "$L/$name.txt"
}
timm_phase() {  # timm's benchmark.py on predict_vs_profile's configurations: a process and a file each
  local limit=$1 dir=$L/timm t0=$SECONDS index key args left rc
  phase timm
  mkdir -p "$dir"
  python3 benchmarks/gpu/timm_cases.py list --start "${TIMM_START:-0}" >"$dir/cases.tsv" 2>"$dir/list.err" \
    || { echo "    timm: no cases ($(tail -n 1 "$dir/list.err"))" | tee -a "$L/phases.txt"; return; }
  while IFS=$'\t' read -r index key args; do
    left=$((limit - (SECONDS - t0)))
    if [ "$left" -lt 12 ]; then echo "    timm: time limit, stopped before case $index" | tee -a "$L/phases.txt"; break; fi
    timeout "$left" python3 benchmarks/gpu/timm_cases.py run --case "$index" --out-dir "$dir" </dev/null >"$dir/$key.log" 2>&1
    rc=$?
    echo "    timm $key: rc=$rc $(grep -ho '"step_time_ms": [0-9.]\+' "$dir/$key.json" 2>/dev/null)" | tee -a "$L/phases.txt"
  done <"$dir/cases.tsv"
  python3 benchmarks/gpu/timm_cases.py collect "$dir" --out "$L/timm_benchmark.csv" 2>&1 | tail -n 1
  echo "    timm: done in $((SECONDS - t0)) s" | tee -a "$L/phases.txt"
}
phases=${*:-memprobe selftest tests bare profile compile launcher calibrate predict report}
phase env
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
  python3 -c "import torch,timm,transformers,fvcore;print('torch',torch.__version__,'cuda',torch.version.cuda,'timm',timm.__version__,'transformers',transformers.__version__)"
  nproc; } >"$L/env.txt" 2>&1
cat "$L/env.txt"
for p in $phases; do
  case $p in
    memprobe) run memory_probe 90 python3 benchmarks/gpu/memory_probe.py ;;
    memprobe-infer) run memory_probe_infer 60 python3 benchmarks/gpu/memory_probe.py infer ;;
    selftest) run selftest 150 $V selftest --device cuda ;;
    tests) run cuda_tests 200 python3 -m pytest tests/test_measure_cuda.py -m cuda -v -p no:cacheprovider -W ignore ;;
    bare) run bare_loop 240 python3 benchmarks/gpu/bare_loop.py --rounds 2 --out "$L/bare_loop.json" ;;
    profile) run profile_auto 150 $V profile vit-b/16 resnet50 --device cuda --precision bf16 --mode infer,train \
               --batch-size auto --max-batch-size 1024 --runs 2 --format csv -o "$L/profile_auto.csv" ;;
    compile) run compile 150 $V profile vit-s/16 --device cuda --precision bf16 --batch-size 64 --compile --runs 1 \
               --format csv -o "$L/compile.csv" ;;
    launcher) run launcher_gpus 120 $V sweep --model vit-ti/16,resnet18 --batch-size 8 --stages analytic,measured \
                --device cuda --launcher gpus --out /tmp/sweep-gpus --runs 1 ;;
    calibrate) touch "$LOGS/calibrate.start"
               run calibrate ${CALIBRATE_S:-180} $V calibrate --device cuda --save "$L/gpu_calibration.json" --format json \
                 -o "$L/calibrate_summary.json"
               # a refused fit keeps its measured step times beside the cache entry, and one stopped by the
               # phase's time limit those it measured (*.measuring.json): bring back this call's
               find "$VITBENCH_CACHE_DIR/calibrations" -maxdepth 1 -type f \( -name '*.refused-*.json' -o -name '*.measuring.json' \) \
                 -newer "$LOGS/calibrate.start" -exec cp {} "$L/" \; 2>/dev/null ;;
    predict) if [ -f "$CAL" ]; then cal=(--calibration "$CAL"); else cal=(); echo "    predict: no calibration at $CAL: the published fit only"; fi
             run predict_vs_profile ${PREDICT_S:-150} python3 benchmarks/gpu/predict_vs_profile.py ${cal[@]+"${cal[@]}"} \
               --min-run-time ${PREDICT_MIN_RUN_TIME:-0.3} --out "$L/predict_vs_profile.csv" ;;
    kernels) ks=${KERNELS_S:-100}
             run kernel_records "$ks" python3 benchmarks/gpu/kernel_records.py --device "${KERNELS_DEVICE:-cuda}" \
               --max-seconds $((ks > 40 ? ks - 25 : ks / 2)) --out "$L/kernel_records.csv" ${KERNELS_ARGS:-} ;;
    timm) timm_phase ${TIMM_S:-35} ;;
    traces) run trace_parity ${TRACES_S:-90} python3 benchmarks/gpu/trace_parity.py --out "$L/trace_parity.csv" ;;
    report) run report ${REPORT_S:-330} $V report --device cuda --runs ${REPORT_RUNS:-2} --out "$L/h100-report" ;;
    *) echo "unknown phase $p"; exit 2 ;;
  esac
done
phase end
