#!/usr/bin/env bash
# One GPU session's checks, in the order that matters if time runs out: the machine and
# versions, a smoke test, the compiled-step benchmark (tracegrad on JAX's GPU, torch on
# cuda beside it), the digits example eager and compiled, then a sample of the test suite on
# the GPU. Every log is written under ${OUT:-gpu-out}. Runs with the machine's own python3
# (its JAX and torch); tracegrad from this checkout.
#   bash benchmarks/gpu_check.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONPATH=$PWD
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
PY=${PY:-python3}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  $PY -c "import sys, jax, torch; print(sys.version.split()[0], 'jax', jax.__version__, jax.devices(), 'torch', torch.__version__, torch.cuda.is_available())"
  $PY -c "
import tracegrad as t
x = t.ones(2, 2, requires_grad=True); (x * 3).sum().backward()
print('smoke', x.device, x.grad.tolist(), t.cuda.is_available(), t.cuda.get_device_name())"
} 2>&1 | tee "$OUT/env.txt"
# torch.compile's rows last (its first calls compile for tens of seconds each on a GPU)
timeout ${BENCH_S:-200} $PY benchmarks/compile_step.py --steps ${STEPS:-200} --torch-device cuda --no-torch-compile 2>&1 | tee "$OUT/compile_step.txt"
for mode in "" --compile; do
  t0=$SECONDS
  timeout 60 $PY -m tracegrad.examples.digits --epochs 3 $mode 2>&1 | tail -3
  echo "digits --epochs 3 $mode: $((SECONDS - t0)) s wall (imports and compilation included)"
done 2>&1 | tee "$OUT/digits.txt"
timeout ${OVERHEAD_S:-150} $PY benchmarks/compile_overhead.py --models mlp,lm --calls 100 --eager lm 2>&1 | tee "$OUT/compile_overhead.txt"
# -v: each result is printed as it comes, so a run cut off by the timeout still says what failed
timeout ${TESTS_S:-120} $PY -m pytest -p no:cacheprovider -v -n 8 --dist loadfile --maxfail=30 \
  ${GPU_TESTS:-tests/compile/test_optimizers.py tests/compile/test_forward_only.py tests/compile/test_hooks.py tests/autograd tests/examples} \
  > "$OUT/tests.txt" 2>&1
grep -E "FAILED|ERROR|passed|failed" "$OUT/tests.txt" | tail -40
[ -n "$NO_TORCH_COMPILE" ] && exit 0
echo "torch.compile on cuda (ms per step, first-call s):"
timeout ${TORCH_COMPILE_S:-120} $PY benchmarks/compile_step.py --torch-worker --torch-device cuda --steps ${STEPS:-200} --warmup 5 --models mlp,cnn,lm 2>&1 | tail -3 | tee "$OUT/torch_compile.txt"
