#!/bin/bash
# The short GPU check (a few minutes of device time): dataflow_cuda.cu, the GPU tests and the GPU
# worker tests (tests/cuda/test_gpu_worker.c), logs in $OUT. device_check.sh runs everything.
set -u
out=${OUT:-build/gpu-run}; dir=build/gpu/q; mkdir -p "$out" "$dir"
cuda_lib="$(dirname "$(dirname "$(command -v nvcc)")")/lib64"
flags="-std=c11 -g -O1 -Wall -Wextra -Werror -DDATAFLOW_CUDA -I."
libs="-L$cuda_lib -Wl,-rpath,$cuda_lib -lcudart -lcublas -lstdc++ -lm -lpthread"
t0=$(date +%s)
nvcc -arch=sm_90 -c dataflow_cuda.cu -o $dir/cu.o >"$out/nvcc.log" 2>&1 & a=$!
cc $flags -c dataflow.c -o $dir/df.o 2>"$out/cc.log" & b=$!
cc $flags -c tests/harness.c -o $dir/h.o 2>>"$out/cc.log" & c=$!
cc $flags -c tests/cuda/test_gpu.c -o $dir/tg.o 2>>"$out/cc.log" & d=$!
cc $flags -c tests/cuda/test_gpu_worker.c -o $dir/tw.o 2>>"$out/cc.log" & e=$!
wait $a $b $c $d $e
echo "built in $(( $(date +%s) - t0 )) s"
cc $dir/tw.o $dir/h.o $dir/df.o $dir/cu.o $libs -o $dir/worker_tests 2>>"$out/link.log"
cc $dir/tg.o $dir/h.o $dir/df.o $dir/cu.o $libs -o $dir/gpu_tests 2>>"$out/link.log"
timeout 60 $dir/worker_tests >"$out/gpu_worker.log" 2>&1
timeout 90 $dir/gpu_tests >"$out/gpu_tests.log" 2>&1
nvidia-smi -L > "$out/smi.txt" 2>&1
echo "== $(( $(date +%s) - t0 )) s"; cat "$out/smi.txt"; tail -n 3 "$out/cc.log" "$out/link.log" "$out/nvcc.log"; grep -A3 "^FAIL" "$out"/*.log | head -30
tail -n 1 "$out/gpu_worker.log" "$out/gpu_tests.log"
