#!/bin/bash
# The GPU checks in one go, for a machine with a GPU and nvcc (the CPU-only CI compiles the same
# programs but cannot run them): builds dataflow_cuda.cu and the GPU test programs in parallel,
# runs the GPU tests, the GPU device tests, the suites with every session on the GPU and the GPU
# benchmark, and leaves the logs in $OUT (default build/gpu-run). Ends with a summary table.
#   bash tests/cuda/device_check.sh
set -u
out=${OUT:-build/gpu-run}
dir=build/gpu/dev
CC=${CC:-cc}
mkdir -p "$out" "$dir"
command -v nvcc >/dev/null 2>&1 || { echo "device_check: no nvcc"; exit 2; }
nvidia-smi >"$out/nvidia-smi.txt" 2>&1
cuda_lib="$(dirname "$(dirname "$(command -v nvcc)")")/lib64"
flags="-std=c11 -g -O1 -Wall -Wextra -DDATAFLOW_CUDA -I."
libs="-L$cuda_lib -Wl,-rpath,$cuda_lib -lcudart -lcublas -lstdc++ -lm -lpthread"
suites="tests/test_control_flow.c tests/test_grad_cf.c tests/test_ops.c tests/test_optim.c
    tests/test_executor.c tests/test_loop_state.c tests/test_grad_ops.c tests/test_conv.c tests/test_bad_input.c
    tests/test_graph.c tests/test_partition.c tests/test_threads.c tests/test_graphdef.c tests/test_ref_cf.c
    tests/test_tensor_array.c tests/test_tensor_list.c tests/test_seq.c tests/test_random.c"
t0=$(date +%s)
pids=""
nvcc ${DF_NVCC_FLAGS:--arch=sm_90} -c dataflow_cuda.cu -o "$dir/dataflow_cuda.o" >"$out/nvcc.log" 2>&1 & pids="$pids $!"
$CC $flags -c dataflow.c -o "$dir/dataflow.o" >"$out/cc_dataflow.log" 2>&1 & pids="$pids $!"
$CC $flags -c tests/harness.c -o "$dir/harness.o" 2>>"$out/cc.log" & pids="$pids $!"
$CC $flags -c tests/cuda/test_gpu.c -o "$dir/test_gpu.o" 2>>"$out/cc.log" & pids="$pids $!"
$CC $flags -c tests/cuda/test_gpu_worker.c -o "$dir/test_gpu_worker.o" 2>>"$out/cc.log" & pids="$pids $!"
$CC $flags -c tests/cuda/test_cuda.c -o "$dir/test_cuda.o" 2>>"$out/cc.log" & pids="$pids $!"
$CC $flags -c tests/cuda/force_gpu.c -o "$dir/force_gpu.o" 2>>"$out/cc.log" & pids="$pids $!"
for f in $suites; do
    $CC $flags -include tests/cuda/force_gpu.h -c "$f" -o "$dir/forced_$(basename "$f" .c).o" 2>>"$out/cc.log" & pids="$pids $!"
done
$CC -std=c11 -O2 -march=native -DDATAFLOW_CUDA -I. -c dataflow.c -o "$dir/dataflow_o2.o" 2>>"$out/cc.log" & pids="$pids $!"
for p in $pids; do wait "$p" || echo "a compile failed (see $out/*.log)"; done
echo "built in $(( $(date +%s) - t0 )) s"
cuda="$dir/dataflow_cuda.o $libs"
$CC "$dir/test_cuda.o" "$dir/harness.o" "$dir/dataflow.o" $cuda -o "$dir/cuda_tests" 2>>"$out/link.log"
$CC "$dir/test_gpu.o" "$dir/test_gpu_worker.o" "$dir/harness.o" "$dir/dataflow.o" $cuda -o "$dir/gpu_tests" 2>>"$out/link.log"
$CC "$dir"/forced_*.o "$dir/force_gpu.o" "$dir/harness.o" "$dir/dataflow.o" $cuda -o "$dir/gpu_forced" 2>>"$out/link.log"
$CC -std=c11 -O2 -march=native -DDATAFLOW_CUDA -I. bench/cuda/bench_cuda.c "$dir/dataflow_o2.o" $cuda -o "$dir/bench_cuda" 2>>"$out/link.log"
skip=$(sed 's/#.*//' tests/cuda/force_gpu.skip | tr -s ' \t\n' ',' | sed 's/^,//; s/,$//')
timeout 240 "$dir/cuda_tests" >"$out/cuda_tests.log" 2>&1
timeout 240 "$dir/gpu_tests" >"$out/gpu_tests.log" 2>&1
DF_TEST_SKIP=$skip timeout 300 "$dir/gpu_forced" >"$out/gpu_forced.log" 2>&1
timeout 120 "$dir/bench_cuda" >"$out/bench_cuda.log" 2>&1
echo "== failures"
grep -h -A3 '^FAIL' "$out"/cuda_tests.log "$out"/gpu_tests.log "$out"/gpu_forced.log | head -60
echo "== summary ($(( $(date +%s) - t0 )) s)"
head -c 300 "$out/nvidia-smi.txt" | sed -n 3,4p
for l in cuda_tests gpu_tests gpu_forced bench_cuda; do printf '%-12s %s\n' "$l" "$(tail -n 1 "$out/$l.log" 2>/dev/null)"; done
