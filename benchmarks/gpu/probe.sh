#!/usr/bin/env bash
# First look on a lent GPU: selftest, the CUDA tests, the harness against a bare loop, a few
# bf16 profiles (batch auto, --compile), and --launcher gpus. Writes logs under $OUT.
set -u
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg KINETO_LOG_LEVEL=5
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
fi
export PYTHONPATH=${PYTHONPATH:-$PWD}
V="python3 -m vitbench"
phase() { echo "=== $1 ($(date +%T))"; }
phase env; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv | tee $OUT/env.txt
python3 -c "import torch,timm,transformers,fvcore;print(torch.__version__,torch.version.cuda,timm.__version__,transformers.__version__)" | tee -a $OUT/env.txt
phase selftest; timeout 180 $V selftest --device cuda 2>&1 | tee $OUT/selftest.txt
phase cuda-tests; timeout 240 python3 -m pytest tests -m cuda -q -x -p no:cacheprovider 2>&1 | tail -40 | tee $OUT/cuda_tests.txt
phase bare-loop; timeout 240 python3 benchmarks/gpu/bare_loop.py --rounds 2 --out $OUT/bare_loop.json 2>&1 | tail -20
phase profile; timeout 200 $V profile vit-b/16 resnet50 timm:vit_base_patch16_224 --device cuda --precision bf16 --mode infer,train --batch-size auto --max-batch-size 512 --runs 2 --format csv -o $OUT/profile_smoke.csv 2>&1 | tail -20
phase compile; timeout 120 $V profile vit-s/16 --device cuda --precision bf16 --batch-size 64 --compile --runs 1 2>&1 | tail -8
phase launcher-gpus; timeout 120 $V sweep --model vit-ti/16,resnet18 --batch-size 8 --stages analytic,measured --device cuda --launcher gpus --out /tmp/sw --runs 1 2>&1 | tail -15
echo "=== end ($(date +%T))"
