#!/usr/bin/env bash
# The GPU checks in one run, in under 10 minutes on one H100/H200 (docs/performance.md#gpu; 590 s of limits):
#   tests      a subset of the test suite (kernels, GP, approximations, non-conjugate, Kalman, PF)
#   pf         particle-filter throughput at 10^4-10^6 particles, ours against the bare JAX filter
#   floor      the NUTS gradient floor of gp/regression: one potential gradient and its flop rate, N = 1,000-8,000
#   ladder     the approximation ladder (dense / quasiseparable / parallel quasiseparable / HSGP), 10^3-10^5 points
#   parallel   the parallel-in-time quasiseparable rung (associative scan) and HSGP at 10^6 points
#   chains     ESS/s of nuts and mams with chains sequential or vectorised, beside chees
# Each section has its own time limit, so one that overruns costs only itself. Nothing here is GPU-specific: the
# programs run on JAX's default device, and the same script runs (slowly) on a CPU.
#
# Usage: bash benchmarks/gpu_suite.sh [OUT_DIR]          (default bench_results/gpu_suite)
#        GPU_SUITE_SMOKE=1 bash benchmarks/gpu_suite.sh  (tiny sizes: checks the script itself, on any machine)
# Writes OUT_DIR/report.md (every section's table and the tail of its log), OUT_DIR/logs/*.log and the ladder's
# OUT_DIR/{ladder,parallel}/{table.md,results.json,cost.png}.
set -u
OUT=${1:-bench_results/gpu_suite}
mkdir -p "$OUT/logs"
REPORT=$OUT/report.md
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}  # the interpreter with JAX for the device (a plain `python` may not exist there)
# JAX takes 75 % of the GPU's memory per process by default: the test workers share one card.
export XLA_PYTHON_CLIENT_PREALLOCATE=false

if [ "${GPU_SUITE_SMOKE:-0}" = 1 ]; then
  TEST_FILES="tests/test_kernels.py"
  PF=(--particles 1000 --steps 100 --repeats 1)
  FLOOR=(--sizes 100 --budget 100=1,1)
  LADDER=(--sizes 1000 --dense-max 1000 --repeats 1)
  PARALLEL=(--sizes 2000 --problems synthetic --rungs quasisep-parallel hsgp --repeats 1 --fit-max-grad-s 0)
  CHAINS=(--sizes 50 --warmup 50 --draws 50)
  LIMITS=(60 60 60 120 120 120)
else  # sized from the first run on an H200, where four sections overran smaller limits (docs/performance.md#gpu)
  TEST_FILES="tests/test_kernels.py tests/test_gp.py tests/test_approx.py tests/test_nonconjugate.py
    tests/test_kalman.py tests/test_pf.py"
  PF=(--particles 10000 100000 1000000 --steps 1000 --repeats 3)
  FLOOR=(--sizes 1000 2000 4000 8000 --budget 1000=1,1 2000=1,1 4000=1,1 8000=1,1)
  # 10^6 points are left out: drawing them and the quasiseparable scan take minutes on a GPU (sequential steps)
  LADDER=(--sizes 1000 10000 100000 --repeats 3 --fit-max-grad-s 0.05)
  # the sequential quasiseparable rung is left out at 10^6 (minutes on a GPU); the parallel one is what is measured
  PARALLEL=(--sizes 1000000 --problems synthetic --rungs quasisep-parallel hsgp --repeats 3 --fit-max-grad-s 0)
  CHAINS=(--sizes 100 --warmup 300 --draws 500)
  # tests 130 -> 110, chains 120 -> 80 and ladder 150 -> 170 (one more rung) to make room for parallel: estimates,
  # not yet measured on a GPU
  LIMITS=(110 60 90 170 80 80)
fi

section() {  # section NAME LIMIT_S COMMAND...: run it, log it, append its status and the log's tail to the report
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  echo "== $name ($(date -u +%H:%M:%S), limit ${limit} s)"
  timeout "$limit" "$@" >"$OUT/logs/$name.log" 2>&1
  local rc=$?
  local status="exit $rc"
  [ $rc = 124 ] && status="stopped at its ${limit} s limit"
  {
    echo "## $name: $status, $((SECONDS - start)) s"
    echo
    echo '```'
    echo "\$ $*"
    grep -v -E '^\s*$|Warning|warn\(|^warning: ' "$OUT/logs/$name.log" | tail -n 60
    echo '```'
    echo
  } >>"$REPORT"
  echo "   $status, $((SECONDS - start)) s"
}

{
  echo "# GPU suite, $(date -u +%Y-%m-%dT%H:%MZ)"
  echo
  echo '```'
  nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
  "$PY" -c "import jax, jaxlib, numpyro, blackjax; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__,
    'numpyro', numpyro.__version__, 'blackjax', blackjax.__version__); print(jax.devices())"
  echo '```'
  echo
} >"$REPORT" 2>&1

# shellcheck disable=SC2086  # TEST_FILES is a list of paths
section tests "${LIMITS[0]}" "$PY" -m pytest -q -p no:cacheprovider -n 4 --durations=5 $TEST_FILES
section pf "${LIMITS[1]}" "$PY" -m benchmarks.pf_throughput --skip-peer "${PF[@]}"
section floor "${LIMITS[2]}" "$PY" -m benchmarks.nuts_vs_numpyro --skip calls compile --floor-only-above 0 \
  --out "$OUT/floor" "${FLOOR[@]}"
section ladder "${LIMITS[3]}" "$PY" -m benchmarks.approximation_ladder --out "$OUT/ladder" "${LADDER[@]}"
section parallel "${LIMITS[4]}" "$PY" -m benchmarks.approximation_ladder --out "$OUT/parallel" "${PARALLEL[@]}"
section chains "${LIMITS[5]}" "$PY" -m benchmarks.chain_method --out "$OUT/chains" "${CHAINS[@]}"
echo "report: $REPORT"
