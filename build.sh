#!/usr/bin/env bash
# dataflow build script.
#   ./build.sh          build and run the demo
#   ./build.sh amalgamate  write dataflow.c from the canonical sources in src/ (the other
#                       commands do it first; CI fails when the committed dataflow.c differs)
#   ./build.sh test     build everything with warnings as errors and run every test
#                       (ASan+UBSan on); the last line is "N passed, N failed"
#   ./build.sh bench    build the benchmarks with -O2 and run them (peers are installed
#                       into .venv by bench/peers/setup.sh when the network allows)
#   ./build.sh fuzz     build the fuzzers in tests/fuzz/ with clang's libFuzzer (+ASan+UBSan)
#                       and run each for DF_FUZZ_SECONDS from its corpus in tests/fuzz/corpus/;
#                       a crash keeps its input under build/fuzz-crashes/ and fails
# Environment: CC (default cc), CXX (default c++), DF_SANITIZE=0 turns sanitizers off,
#              DF_TEST_FILTER=substring runs only matching tests, DF_FUZZ_SECONDS (default 120
#              per fuzzer), DF_FUZZ_MERGE=1 merges what the fuzzers found into the committed
#              corpora (otherwise new inputs stay in build/fuzz/).
set -u
cd "$(dirname "$0")"
CC=${CC:-cc}
CXX=${CXX:-c++}
WARN="-Wall -Wextra -Werror"
LIBS="-lm -lpthread"
mkdir -p build

need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "build.sh: '$1' is needed; trying to install it" >&2
    if command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && apt-get install -y -qq "$2") >/dev/null 2>&1
    fi
    command -v "$1" >/dev/null 2>&1 || { echo "build.sh: please install $2" >&2; exit 2; }
}

# ./build.sh amalgamate: writes dataflow.c from the canonical sources in src/, concatenated in
# the order src/ORDER gives. Needs only a POSIX shell. dataflow.c is rewritten only when it
# changes (so make-like tools and editors see no change otherwise).
df_sources() { sed 's/#.*//' src/ORDER | tr -s ' \t' '\n' | sed '/^$/d'; }
amalgamate() {
    mkdir -p build
    local out=build/dataflow.c.new f
    : >"$out" || exit 1
    for f in $(df_sources); do
        [ -f "src/$f" ] || { echo "build.sh: src/ORDER names src/$f, which does not exist" >&2; exit 1; }
        cat "src/$f" >>"$out" || exit 1
    done
    if cmp -s "$out" dataflow.c; then rm -f "$out"
    else mv "$out" dataflow.c && echo "build.sh: dataflow.c regenerated from src/"; fi
}

demo() {
    need "$CC" gcc
    need gzip gzip
    $CC -std=c11 -O2 $WARN examples/demo.c dataflow.c -o build/demo $LIBS || exit 1
    ./build/demo || exit 1
    # Two real models trained on data/digits.csv.gz, the RNN through a while loop's gradient; the
    # MLP again with its batches from a FIFOQueueV2 that a reader thread fills.
    for e in digits_mlp digits_rnn digits_queue; do
        $CC -std=c11 -O2 $WARN examples/$e.c dataflow.c -o build/$e $LIBS || exit 1
        echo; echo "== $e"
        ./build/$e data/digits.csv.gz || exit 1
    done
    # The GraphDef runner (not run here: it needs a graph; build/dfrun --help says how).
    $CC -std=c11 -O2 $WARN examples/dfrun.c dataflow.c -o build/dfrun $LIBS || exit 1
    echo; echo "== built build/dfrun (runs TensorFlow GraphDefs; build/dfrun --help)"
    # The worker process of multi-process sessions (build/dfworker --port PORT).
    $CC -std=c11 -O2 $WARN examples/dfworker.c dataflow.c -o build/dfworker $LIBS || exit 1
    echo "== built build/dfworker (serves sessions of other processes over TCP; build/dfworker --help)"
}

# Fuzz inputs are replayed and fuzzed with allocations over 2 GiB failing (NULL), as on a small
# machine, instead of ASan's abort: the library must then answer RESOURCE_EXHAUSTED. Temporary
# files of the .npy fuzzer go to build/fuzz/.
FUZZ_ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:max_allocation_size_mb=2048"
FUZZ_TARGETS="graphdef npy checkpoint worker builder"

# A C++ compiler given the implementation, from a .cpp (tests/compile/impl_cpp.cpp) or as
# dataflow.c itself, stops at exactly one error, ours, which says to compile dataflow.c as C.
check_impl_refuses_cpp() {
    local src out n
    for src in tests/compile/impl_cpp.cpp dataflow.c; do
        if out=$($CXX -std=c++11 -x c++ -fsyntax-only "$src" 2>&1); then echo "$src compiled as C++"; return 1; fi
        n=$(printf '%s\n' "$out" | grep -c 'error:')
        if [ "$n" != 1 ] || ! printf '%s\n' "$out" | grep 'error:' | grep -qF 'dataflow.c is C: compile it with a C compiler (cc -c dataflow.c)'; then
            printf '%s\n' "$out" | head -20; echo "$src as C++: $n errors, expected the one #error of dataflow.c"; return 1
        fi
    done
}

# dfrun's error contract: a missing file is one "dfrun: ..." line on stderr and a non-zero
# exit, a bad flag exits 2, --help exits 0.
check_dfrun() {
    $CC -std=c11 -O2 $WARN examples/dfrun.c dataflow.c -o build/dfrun $LIBS || return 1
    if ./build/dfrun /nonexistent.pb --fetch x >/dev/null 2>build/dfrun.err; then
        echo "dfrun succeeded on a missing graph file"; return 1; fi
    [ "$(wc -l <build/dfrun.err)" -eq 1 ] && grep -q '^dfrun: ' build/dfrun.err ||
        { echo "dfrun's error is not one 'dfrun: ' line:"; cat build/dfrun.err; return 1; }
    ./build/dfrun x.pb --fetch x --no-such-flag >/dev/null 2>&1
    [ $? -eq 2 ] || { echo "dfrun did not exit 2 on a bad flag"; return 1; }
    ./build/dfrun --help >/dev/null || { echo "dfrun --help did not exit 0"; return 1; }
}

# dfworker: a bad option is one "dfworker: ..." line and exit 2; --port 0 listens on a free
# port and says which; it ends on SIGTERM.
check_dfworker() {
    $CC -std=c11 -O2 $WARN examples/dfworker.c dataflow.c -o build/dfworker $LIBS || return 1
    ./build/dfworker --port nope >/dev/null 2>build/dfworker.err
    [ $? -eq 2 ] && [ "$(wc -l <build/dfworker.err)" -eq 1 ] && grep -q '^dfworker: ' build/dfworker.err ||
        { echo "dfworker did not refuse a bad port with one line and exit 2:"; cat build/dfworker.err; return 1; }
    ./build/dfworker --port 0 --task 2 >build/dfworker.out 2>&1 &
    local pid=$! i
    for i in $(seq 100); do grep -q 'listening on' build/dfworker.out && break; sleep 0.05; done
    grep -q '^dfworker: task 2 listening on 127.0.0.1:[1-9][0-9]*$' build/dfworker.out
    local ok=$?
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
    [ $ok -eq 0 ] || { echo "dfworker did not say where it listens:"; cat build/dfworker.out; }
    return $ok
}

# Three dfworker processes, each in a network namespace of its own (addresses 10.231.0.2-4
# behind a bridge), serve a loop and its gradient for tests/net/netns_master.c. Needs the right
# to make namespaces (root, CAP_NET_ADMIN): where `ip netns add` is refused, the check says
# so and counts as skipped (return 2).
netns_check() {
    command -v ip >/dev/null 2>&1 || { echo "no ip command"; return 2; }
    local tag=$$ br="dfbr$$" i ok=0 pids=""
    ip netns add "dfw${tag}a" >/dev/null 2>&1 || { echo "ip netns add is not allowed here"; return 2; }
    ip netns del "dfw${tag}a" >/dev/null 2>&1
    $CC -std=c11 -O2 $WARN examples/dfworker.c dataflow.c -o build/dfworker $LIBS || return 1
    $CC -std=c11 -O2 $WARN tests/net/netns_master.c dataflow.c -o build/netns_master $LIBS || return 1
    cleanup_netns() {
        for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        for i in 1 2 3; do ip netns del "dfw${tag}$i" 2>/dev/null; ip link del "dfv${tag}$i" 2>/dev/null; done
        ip link del "$br" 2>/dev/null
    }
    if ip link add "$br" type bridge && ip addr add 10.231.0.1/24 dev "$br" && ip link set "$br" up; then ok=1; fi
    for i in 1 2 3; do
        [ $ok = 1 ] || break
        ip netns add "dfw${tag}$i" && ip link add "dfv${tag}$i" type veth peer name "dfp${tag}$i" &&
        ip link set "dfp${tag}$i" netns "dfw${tag}$i" && ip link set "dfv${tag}$i" master "$br" && ip link set "dfv${tag}$i" up &&
        ip netns exec "dfw${tag}$i" ip addr add "10.231.0.$((i + 1))/24" dev "dfp${tag}$i" &&
        ip netns exec "dfw${tag}$i" ip link set "dfp${tag}$i" up && ip netns exec "dfw${tag}$i" ip link set lo up || ok=0
    done
    if [ $ok != 1 ]; then echo "cannot make the namespaces' links here"; cleanup_netns; return 2; fi
    for i in 1 2 3; do
        ip netns exec "dfw${tag}$i" ./build/dfworker --host "10.231.0.$((i + 1))" --port 2222 --task $((i - 1)) >"build/netns_worker$i.log" 2>&1 &
        pids="$pids $!"
    done
    for i in $(seq 100); do [ "$(cat build/netns_worker*.log 2>/dev/null | grep -c 'listening on')" -ge 3 ] && break; sleep 0.05; done
    ./build/netns_master 10.231.0.2:2222,10.231.0.3:2222,10.231.0.4:2222 >build/netns_master.log 2>&1
    local rc=$?
    cat build/netns_master.log
    cleanup_netns
    [ $rc -eq 0 ] || { cat build/netns_worker*.log; return 1; }
}

# The committed fuzz corpora replayed without libFuzzer (tests/fuzz/standalone.c), one binary
# per target since each defines LLVMFuzzerTestOneInput. $1: the sanitizer flags.
fuzz_regression() {
    mkdir -p build/fuzz
    $CC -std=c11 -g -O1 $WARN $1 -c dataflow.c -o build/fuzz/dataflow_replay.o || return 1
    local name
    for name in $FUZZ_TARGETS; do
        $CC -std=c11 -g -O1 $WARN $1 -I. tests/fuzz/standalone.c tests/fuzz/fuzz_$name.c \
            build/fuzz/dataflow_replay.o -o build/fuzz/replay_$name $LIBS || return 1
        TMPDIR=build/fuzz ASAN_OPTIONS=$FUZZ_ASAN_OPTIONS ./build/fuzz/replay_$name tests/fuzz/corpus/$name || return 1
    done
}

# Allocation fault injection (tests/fault/test_alloc_faults.c, the library built in with counting
# DF_MALLOC/DF_BFC_* hooks): every heap allocation, tensor buffer and allocator region of a run of
# a loop holding a cond, its gradients, two devices (scenario 0) fails in turn, alone and from it
# on, then random ones with threads; each must end with RESOURCE_EXHAUSTED or the same results,
# free everything, not hang. Scenarios 1 (functional control flow, nested loops, second order,
# Adam, three devices), 2 (a GraphDef round trip, a checkpoint) and 3 (a queue, cost-model
# placement, bfloat16 transfers) every 41st point. $1: the sanitizer flags. The last line says
# how many points ran.
fault_injection() {
    $CC -std=c11 -g -O1 $WARN $1 -I. tests/fault/test_alloc_faults.c -o build/test_alloc_faults $LIBS || return 1
    local sc rc=0 points=0 p
    for sc in 0 1 2 3; do
        ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} ./build/test_alloc_faults -scenario $sc \
            $([ $sc = 0 ] || echo -limit 0 -stride 41 -random 40) >build/fault$sc.log 2>&1 || rc=1
        grep -E '^(FAIL|CRASH|HANG)' build/fault$sc.log | head -20
        p=$(tail -n 1 build/fault$sc.log | sed -n 's/^\([0-9]*\) passed, 0 failed$/\1/p')
        [ -n "$p" ] || { rc=1; tail -n 3 build/fault$sc.log; p=0; }
        points=$((points + p))
    done
    echo "$points points exercised (scenario 0: each of its $(sed -n 's/^scenario: .*per run //p' build/fault0.log)" \
         "failing alone and from it on; scenarios 1 to 3: every 41st; random ones with threads)"
    return $rc
}

# valgrind_check: the valgrind memcheck subset (see run_tests); its log is build/valgrind.log.
VALGRIND_SUITES="tests/test_graph.c tests/test_control_flow.c tests/test_functions.c tests/test_grad_cf.c
    tests/test_bad_input.c tests/test_queue.c tests/test_executor.c tests/test_checkpoint.c"
VALGRIND_CRASHING=checkpoint_crash_or_error_at_every_write_and_rename
valgrind_check() {
    $CC -std=c11 -g -O1 $WARN -I. tests/harness.c $VALGRIND_SUITES dataflow.c -o build/valgrind_tests $LIBS || return 1
    DF_TEST_SKIP=$VALGRIND_CRASHING valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
        ./build/valgrind_tests >build/valgrind.log 2>&1 || { tail -n 40 build/valgrind.log; return 1; }
    valgrind -q --error-exitcode=99 --leak-check=no ./build/valgrind_tests $VALGRIND_CRASHING >>build/valgrind.log 2>&1 ||
        { tail -n 40 build/valgrind.log; return 1; }
    grep -h ' passed, ' build/valgrind.log | tr '\n' ' '
}

passed=0; failed=0; skipped=0
step() {   # step NAME COMMAND... : a build check counted like a test
    local name=$1; shift
    if "$@" >build/step.log 2>&1; then
        passed=$((passed + 1)); echo "ok   build: $name"
    else
        failed=$((failed + 1)); echo "FAIL build: $name"; sed 's/^/    /' build/step.log | head -40
    fi
}

# The GPU device's tests: tests/cuda/test_gpu.c (every GPU kernel against the CPU, control flow,
# out of memory, bad requests) and the suites below again with every session on a GPU
# (tests/cuda/force_gpu.h; the tests among them that check a CPU-only layout are named, with why,
# in tests/cuda/force_gpu.skip). Built against the host emulation of the GPU (plain C, so on every
# machine, with the sanitizers), and against dataflow_cuda.o where nvcc is found (run where a GPU
# is seen; no sanitizers there, as the other GPU tests).
GPU_FORCED_SUITES="tests/test_control_flow.c tests/test_grad_cf.c tests/test_ops.c tests/test_optim.c
    tests/test_executor.c tests/test_loop_state.c tests/test_grad_ops.c tests/test_conv.c tests/test_bad_input.c
    tests/test_graph.c tests/test_partition.c tests/test_threads.c tests/test_graphdef.c"
gpu_skip_list() { sed 's/#.*//' tests/cuda/force_gpu.skip | tr -s ' \t\n' ',' | sed 's/^,//; s/,$//'; }

# gpu_objects DIR FLAGS WITH_TESTS: the objects of the GPU device's test programs, compiled with
# FLAGS into DIR: dataflow.c (-DDATAFLOW_CUDA), the emulator and, if WITH_TESTS is 1, the test
# files (the suites with force_gpu.h included). Run in the background (see gpu_wait).
gpu_objects() {
    local dir=$1 flags="-std=c11 -g -O1 $WARN $2 -DDATAFLOW_CUDA -I." f
    mkdir -p "$dir"
    $CC $flags -c dataflow.c -o "$dir/dataflow.o" || return 1
    $CC $flags -c tests/cuda/gpu_emulator.c -o "$dir/gpu_emulator.o" || return 1
    [ "$3" = 1 ] || { touch "$dir/complete"; return 0; }
    $CC $flags -c tests/harness.c -o "$dir/harness.o" || return 1
    $CC $flags -c tests/cuda/test_gpu.c -o "$dir/test_gpu.o" || return 1
    $CC $flags -c tests/cuda/test_gpu_emulator.c -o "$dir/test_gpu_emulator.o" || return 1
    $CC $flags -c tests/cuda/force_gpu.c -o "$dir/force_gpu.o" || return 1
    for f in $GPU_FORCED_SUITES; do
        $CC $flags -include tests/cuda/force_gpu.h -c "$f" -o "$dir/forced_$(basename "$f" .c).o" || return 1
    done
    touch "$dir/complete"
}
# gpu_wait PID DIR LOG: waits until the background job PID has built DIR (gpu_objects marks a
# complete DIR) or has ended; the build's errors are the step's output.
gpu_wait() {
    while [ ! -f "$2/complete" ] && kill -0 "$1" 2>/dev/null; do sleep 1; done
    [ -f "$2/complete" ] || { cat "$3"; return 1; }
}

# count_tests NAME LOG: adds a test binary's last line "N passed, N failed" to the totals and
# shows its failures; a log without that line (a crash) counts as one failure.
count_tests() {
    local name=$1 log=$2 last p f sk
    last=$(tail -n 1 "$log")
    p=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(echo "$last" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    if [ -z "$p" ]; then
        failed=$((failed + 1)); echo "FAIL $name: the test binary crashed or did not finish ($log):"
        tail -n 15 "$log" | sed 's/^/    /'; return
    fi
    grep -E '^FAIL |^    [^ ]+:[0-9]+: ' "$log" | cut -c1-400 | head -n 60
    sk=$(sed -n 's/^(\([0-9]*\) skipped)$/, \1 skipped/p' "$log")
    echo "$name: $p passed, $f failed$sk (log: $log)"
    passed=$((passed + p)); failed=$((failed + f))
}

run_tests() {
    need "$CC" gcc
    local san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    [ "${DF_SANITIZE:-1}" = 0 ] && san=""
    # The GPU device's objects compile in the background while the build checks run (on the
    # second core): plain -O1 for dataflow_cuda.o's programs and the emulated digits model (their
    # test objects only where nvcc is found), then sanitized for the emulated runs.
    local with_cuda=0; command -v nvcc >/dev/null 2>&1 && with_cuda=1
    rm -rf build/gpu/emulated build/gpu/host
    mkdir -p build/gpu
    { gpu_objects build/gpu/host "" $with_cuda >build/gpu/host.log 2>&1
      gpu_objects build/gpu/emulated "$san" 1 >build/gpu/emulated.log 2>&1; } &
    local gpu_job=$!
    # Build checks: both documented uses, the header as C99/C11/C++, warnings as errors.
    step "header compiles as C99" $CC -std=c99 $WARN -pedantic -fsyntax-only tests/compile/header_c.c
    step "header compiles as C11" $CC -std=c11 $WARN -pedantic -fsyntax-only tests/compile/header_c.c
    if command -v "$CXX" >/dev/null 2>&1; then
        step "header compiles as C++" $CXX -std=c++11 $WARN -fsyntax-only tests/compile/header_cpp.cpp
        step "dataflow.c as C++ stops at one #error" check_impl_refuses_cpp
    else skipped=$((skipped + 1)); echo "skip build: header as C++ (no C++ compiler)"; fi
    step "dataflow.c -O2 with $CC" $CC -std=c11 -O2 $WARN -c dataflow.c -o build/dataflow_o2.o
    step "library compiles at -O3 with warnings as errors (gcc, CMake's Release level)" sh -c "$CC -std=c11 -O3 $WARN -c dataflow.c -o build/dataflow_o3.o && $CC -std=c11 -O3 $WARN -DDATAFLOW_CUDA -c dataflow.c -o build/dataflow_o3_cuda.o"
    if command -v clang >/dev/null 2>&1; then
        step "dataflow.c with clang" clang -std=c11 -O2 $WARN -c dataflow.c -o build/dataflow_clang.o
    else skipped=$((skipped + 1)); echo "skip build: clang not installed"; fi
    step "DF_NO_THREADS build" $CC -std=c11 $WARN -DDF_NO_THREADS -c dataflow.c -o build/dataflow_nothreads.o
    step "two translation units" sh -c "$CC -std=c11 -O2 $WARN -DDATAFLOW_IMPLEMENTATION tests/compile/two_tu.c dataflow.c -o build/two_tu $LIBS && ./build/two_tu"
    step "one translation unit" sh -c "$CC -std=c11 -O2 $WARN tests/compile/one_tu.c -o build/one_tu $LIBS && ./build/one_tu"
    step "benchmarks compile (bench/bench_*.c, not run)" sh -c "for b in bench/bench_*.c; do $CC -std=c11 -O2 $WARN -I. -fsyntax-only \$b || exit 1; done"
    step "demo runs" sh -c "$CC -std=c11 -O2 $WARN examples/demo.c dataflow.c -o build/demo $LIBS && ./build/demo"
    for e in digits_mlp digits_rnn digits_queue; do
        step "$e trains to its accuracy target" sh -c "$CC -std=c11 -O2 $WARN examples/$e.c dataflow.c -o build/$e $LIBS && ./build/$e data/digits.csv.gz"
    done
    step "dfrun builds and reports bad input" check_dfrun
    step "dfworker builds, refuses bad options and listens" check_dfworker
    # The MPI transport (-DDATAFLOW_MPI): where Open MPI is installed (.ci/run installs it).
    if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
        step "MPI transport: mpirun -np 4, a loop and its gradient over three worker ranks" sh -c \
            "mpicc -std=c11 -O1 $WARN -DDATAFLOW_MPI -I. tests/mpi/mpi_main.c dataflow.c -o build/mpi_test $LIBS && timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 ./build/mpi_test"
    else skipped=$((skipped + 1)); echo "skip build: MPI transport (mpicc/mpirun not installed; Debian: libopenmpi-dev openmpi-bin)"; fi
    local nsout nsrc
    nsout=$(netns_check 2>&1); nsrc=$?
    if [ $nsrc -eq 2 ]; then skipped=$((skipped + 1)); echo "skip: workers in network namespaces ($(echo "$nsout" | tail -n 1))"
    elif [ $nsrc -eq 0 ]; then passed=$((passed + 1)); echo "ok   build: three workers in network namespaces: $(echo "$nsout" | tail -n 1)"
    else failed=$((failed + 1)); echo "FAIL build: three workers in network namespaces"; echo "$nsout" | head -30 | sed 's/^/    /'; fi
    step "fuzz corpora replay without a crash (tests/fuzz/corpus)" fuzz_regression "$san"
    local faults
    if faults=$(fault_injection "$san" 2>&1); then
        passed=$((passed + 1)); echo "ok   build: allocation faults: $(echo "$faults" | tail -n 1)"
    else
        failed=$((failed + 1)); echo "FAIL build: allocation faults (tests/fault; logs: build/fault[0-3].log)"; echo "$faults" | head -40 | sed 's/^/    /'
    fi
    local host=build/gpu/host emu=build/gpu/emulated
    step "GPU objects compile (dataflow.c -DDATAFLOW_CUDA -O1$([ $with_cuda = 1 ] && echo ", the GPU device's tests"))" gpu_wait $gpu_job $host build/gpu/host.log
    if command -v nvcc >/dev/null 2>&1; then
        # The GPU side: compiled and linked into its tests everywhere; run where a GPU is seen.
        local cuda_lib; cuda_lib="$(dirname "$(dirname "$(command -v nvcc)")")/lib64"
        local cuda_link="build/dataflow_cuda.o -L$cuda_lib -Wl,-rpath,$cuda_lib -lcudart -lcublas -lstdc++"
        step "dataflow_cuda.cu compiles with nvcc" nvcc ${DF_NVCC_FLAGS:-} -c dataflow_cuda.cu -o build/dataflow_cuda.o
        step "GPU tests build (tests/cuda, -DDATAFLOW_CUDA, cuBLAS)" sh -c "$CC -std=c11 -O1 $WARN -DDATAFLOW_CUDA -I. tests/cuda/test_cuda.c $host/harness.o $host/dataflow.o $cuda_link -o build/cuda_tests $LIBS && $CC -std=c11 -O1 $WARN -DDATAFLOW_CUDA tests/cuda/gpu_count.c $host/dataflow.o $cuda_link -o build/gpu_count $LIBS"
        step "GPU device tests build with dataflow_cuda.o (test_gpu.c; the suites on the GPU)" sh -c "$CC $host/test_gpu.o $host/harness.o $host/dataflow.o $cuda_link -o build/gpu/gpu_tests $LIBS && $CC $host/forced_*.o $host/force_gpu.o $host/harness.o $host/dataflow.o $cuda_link -o build/gpu/gpu_forced $LIBS"
        local gpus; gpus=$(./build/gpu_count 2>/dev/null || echo 0)
        if [ "${gpus:-0}" -gt 0 ] 2>/dev/null; then
            step "GPU tests on $gpus GPU(s) (build/cuda_tests)" sh -c "./build/cuda_tests >build/cuda_tests.log 2>&1; rc=\$?; tail -n 1 build/cuda_tests.log; grep -q ' 0 failed' build/cuda_tests.log && [ \$rc -eq 0 ]"
            ./build/gpu/gpu_tests ${DF_TEST_FILTER:-} >build/gpu/gpu_tests.log 2>&1
            count_tests "GPU device tests on $gpus GPU(s) (build/gpu/gpu_tests)" build/gpu/gpu_tests.log
            DF_TEST_SKIP=$(gpu_skip_list) ./build/gpu/gpu_forced ${DF_TEST_FILTER:-} >build/gpu/gpu_forced.log 2>&1
            count_tests "suites with every session on a GPU (build/gpu/gpu_forced)" build/gpu/gpu_forced.log
        else
            skipped=$((skipped + 3))
            echo "skip: GPU tests ($(grep -c '^DF_TEST' tests/cuda/test_cuda.c) tests; no GPU visible)"
            echo "skip: GPU device tests on a GPU ($(grep -c '^DF_TEST' tests/cuda/test_gpu.c) tests; no GPU visible)"
            echo "skip: the suites with every session on a GPU ($(cat $GPU_FORCED_SUITES | grep -c '^DF_TEST') tests; no GPU visible)"
        fi
    else skipped=$((skipped + 1)); echo "skip build: nvcc not found (dataflow_cuda.cu not compiled)"; fi
    # The same on the host emulation of the GPU, everywhere, with the sanitizers (the two programs
    # run in the background, beside the next checks; their results are counted before the unit
    # tests'); and the digits model trained with --gpu on it (no sanitizers: a few seconds).
    step "GPU device tests compile for the emulated GPU (tests/cuda/gpu_emulator.c, sanitizers)" gpu_wait $gpu_job $emu build/gpu/emulated.log
    local emu_runs=""
    if [ -f $emu/complete ]; then
        if $CC $san $emu/test_gpu.o $emu/test_gpu_emulator.o $emu/harness.o $emu/dataflow.o $emu/gpu_emulator.o -o build/gpu/emulated_tests $LIBS >build/gpu/link.log 2>&1 &&
           $CC $san $emu/forced_*.o $emu/force_gpu.o $emu/harness.o $emu/dataflow.o $emu/gpu_emulator.o -o build/gpu/emulated_forced $LIBS >>build/gpu/link.log 2>&1; then
            { ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} ./build/gpu/emulated_tests ${DF_TEST_FILTER:-} >build/gpu/emulated_tests.log 2>&1
              DF_TEST_SKIP=$(gpu_skip_list) ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} ./build/gpu/emulated_forced ${DF_TEST_FILTER:-} >build/gpu/emulated_forced.log 2>&1; } &
            emu_runs=$!
            echo "(the GPU device tests on the emulated GPU run in the background; their results come before the unit tests)"
        else failed=$((failed + 1)); echo "FAIL build: the emulated GPU's test programs do not link"; head -40 build/gpu/link.log | sed 's/^/    /'; fi
    fi
    step "digits_mlp --gpu trains to its accuracy target on the emulated GPU" sh -c "$CC -std=c11 -O1 $WARN -DDATAFLOW_CUDA examples/digits_mlp.c $host/dataflow.o $host/gpu_emulator.o -o build/gpu/digits_mlp $LIBS && ./build/gpu/digits_mlp data/digits.csv.gz --gpu"
    # The AVX-512 GEMM kernel on CPUs without AVX-512: the whole suite built against SIMDe's
    # portable definitions of the AVX-512 intrinsics (Debian: libsimde-dev), that kernel chosen.
    if [ ! -f /usr/include/simde/x86/avx512.h ] && command -v apt-get >/dev/null 2>&1; then
        (apt-get update -qq && apt-get install -y -qq libsimde-dev) >/dev/null 2>&1
    fi
    if [ "$(uname -m)" != x86_64 ]; then skipped=$((skipped + 1)); echo "skip build: AVX-512 emulation (not an x86-64 machine)"
    elif [ -f /usr/include/simde/x86/avx512.h ]; then
        step "AVX-512 kernels, emulated with SIMDe: every test" sh -c "$CC -std=c11 -O2 $WARN -Wno-psabi -DDF_EMULATE_AVX512 -I. tests/harness.c tests/test_*.c dataflow.c -o build/avx512_emulated $LIBS && ./build/avx512_emulated >build/avx512_emulated.log 2>&1 && ! grep -q 'no avx512 kernels' build/avx512_emulated.log"
    else skipped=$((skipped + 1)); echo "skip build: AVX-512 emulation (SIMDe headers not installed)"; fi
    # The threaded tests again under ThreadSanitizer (where the toolchain has it).
    if [ "${DF_SANITIZE:-1}" != 0 ] && echo 'int main(void){return 0;}' | $CC -x c -fsanitize=thread - -o build/tsan_probe >/dev/null 2>&1; then
        step "ThreadSanitizer: executor, control flow, graph, thread, loop-gradient, loop-state, partition, worker, distributed, queue, function and stress tests" sh -c "$CC -std=c11 -g -O1 $WARN -fsanitize=thread -I. tests/harness.c tests/test_control_flow.c tests/test_executor.c tests/test_graph.c tests/test_threads.c tests/test_grad_cf.c tests/test_loop_state.c tests/test_partition.c tests/test_partition_random.c tests/test_worker.c tests/test_distributed.c tests/test_queue.c tests/test_functions.c tests/test_stress.c dataflow.c -o build/tsan_tests $LIBS && TSAN_OPTIONS=halt_on_error=1 ./build/tsan_tests >build/tsan.log 2>&1"
    else skipped=$((skipped + 1)); echo "skip build: ThreadSanitizer not available with $CC"; fi
    # The concurrent-run tests again with ASan and DF_NO_TENSOR_RECYCLE: small tensors are then
    # freed at their last release instead of kept for reuse, so ASan sees a tensor used after it
    # (a recycled header is live memory to ASan).
    if [ "${DF_SANITIZE:-1}" != 0 ]; then
        step "ASan without tensor recycling (DF_NO_TENSOR_RECYCLE): stress, thread and executor tests" sh -c "$CC -std=c11 -g -O1 $WARN $san -DDF_NO_TENSOR_RECYCLE -I. tests/harness.c tests/test_stress.c tests/test_threads.c tests/test_executor.c dataflow.c -o build/norecycle_tests $LIBS || exit 1; ASAN_OPTIONS=\${ASAN_OPTIONS:-detect_leaks=1} ./build/norecycle_tests >build/norecycle.log 2>&1 || { tail -n 30 build/norecycle.log; exit 1; }"
    else skipped=$((skipped + 1)); echo "skip build: ASan without tensor recycling (DF_SANITIZE=0)"; fi
    # A representative subset under valgrind's memcheck (no sanitizers in that build): graphs,
    # control flow, functions, loop gradients, bad input, queues, the executor, checkpoints.
    # Definite leaks and every memory error fail it. The checkpoint test whose forked children
    # stop dead in the middle of a write (a crash, on purpose) runs on its own without the leak
    # check: such a child cannot free what it holds, and valgrind would change its exit status.
    if command -v valgrind >/dev/null 2>&1; then
        step "valgrind memcheck: graph, control flow, function, loop-gradient, bad-input, queue, executor and checkpoint tests" valgrind_check
    else skipped=$((skipped + 1)); echo "skip build: valgrind not installed"; fi
    if [ -n "$emu_runs" ]; then
        wait $emu_runs
        count_tests "GPU device tests, emulated GPU (build/gpu/emulated_tests)" build/gpu/emulated_tests.log
        count_tests "suites with every session on the emulated GPU (build/gpu/emulated_forced)" build/gpu/emulated_forced.log
    fi
    # Unit tests: one binary, sanitizers on.
    local srcs; srcs=$(ls tests/test_*.c)
    if ! $CC -std=c11 -g -O1 $WARN $san -I. $srcs tests/harness.c dataflow.c -o build/run_tests $LIBS >build/compile.log 2>&1; then
        cat build/compile.log | head -60
        failed=$((failed + 1)); echo "FAIL build: unit tests do not compile"
        echo "$passed passed, $failed failed"; exit 1
    fi
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} ./build/run_tests ${DF_TEST_FILTER:-} | tee build/test.log
    local t_pass t_fail
    t_pass=$(tail -n 1 build/test.log | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    t_fail=$(tail -n 1 build/test.log | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    if [ -z "$t_pass" ]; then t_pass=0; t_fail=1; echo "FAIL unit tests: the test binary crashed or did not finish"; fi
    passed=$((passed + t_pass)); failed=$((failed + t_fail))
    [ "$skipped" -gt 0 ] && echo "($skipped build checks skipped)"
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}

run_bench() {
    need "$CC" gcc
    for b in bench/bench_*.c; do
        name=$(basename "$b" .c)
        $CC -std=c11 -O2 -march=native $WARN -I. "$b" dataflow.c -o "build/$name" $LIBS || exit 1
    done
    if [ "${DF_BENCH_PEERS:-1}" = 1 ]; then bash bench/peers/setup.sh || echo "(peers unavailable: ratios against TensorFlow are skipped)"; fi
    for b in build/bench_*; do echo; echo "== $(basename "$b")"; "$b" || exit 1; done
    if command -v nvcc >/dev/null 2>&1; then     # the GPU bench (says so and skips without a GPU)
        local cuda_top; cuda_top="$(dirname "$(dirname "$(command -v nvcc)")")"
        nvcc ${DF_NVCC_FLAGS:-} -c dataflow_cuda.cu -o build/dataflow_cuda.o || exit 1
        $CC -std=c11 -O2 $WARN -DDATAFLOW_CUDA -I. -I"$cuda_top/include" bench/cuda/bench_cuda.c dataflow.c build/dataflow_cuda.o \
            -L"$cuda_top/lib64" -Wl,-rpath,"$cuda_top/lib64" -lcudart -lcublas -lstdc++ -o build/cuda_bench $LIBS || exit 1
        echo; echo "== cuda_bench"; ./build/cuda_bench || exit 1
    fi
}

run_fuzz() {
    need clang clang
    local seconds=${DF_FUZZ_SECONDS:-120}
    case "$seconds" in ''|*[!0-9]*) echo "build.sh: DF_FUZZ_SECONDS must be a number of seconds" >&2; exit 2 ;; esac
    mkdir -p build/fuzz build/fuzz-crashes
    # Debian's clang links libFuzzer only with its compiler-rt; say so rather than fail later.
    if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long s) { (void)d; (void)s; return 0; }' |
            clang -x c -fsanitize=fuzzer - -o build/fuzz/probe >build/fuzz/probe.log 2>&1; then
        echo "build.sh: clang cannot build libFuzzer targets here (-fsanitize=fuzzer failed):" >&2
        head -5 build/fuzz/probe.log | sed 's/^/    /' >&2
        echo "build.sh: install a clang with its compiler-rt (Debian: clang, libclang-rt-*-dev)" >&2
        exit 1
    fi
    local flags="-std=c11 -g -O1 $WARN -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    echo "== building the fuzzers (clang, libFuzzer, ASan, UBSan)"
    clang $flags -fsanitize=fuzzer-no-link,address,undefined -c dataflow.c -o build/fuzz/dataflow_fuzz.o || exit 1
    local name
    for name in $FUZZ_TARGETS; do
        clang $flags -fsanitize=fuzzer,address,undefined -I. tests/fuzz/fuzz_$name.c build/fuzz/dataflow_fuzz.o \
            -o build/fuzz/fuzz_$name $LIBS || exit 1
    done
    local crashed=0
    for name in $FUZZ_TARGETS; do
        # New inputs go to the first directory (scratch, kept between runs); the committed
        # corpus is only read, unless DF_FUZZ_MERGE=1 below.
        local corpus=tests/fuzz/corpus/$name scratch=build/fuzz/corpus_$name log=build/fuzz/$name.log
        mkdir -p "$scratch"
        echo "== fuzz_$name: ${seconds}s from $corpus (log: $log)"
        TMPDIR=build/fuzz ASAN_OPTIONS=$FUZZ_ASAN_OPTIONS ./build/fuzz/fuzz_$name "$scratch" "$corpus" \
            -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="build/fuzz-crashes/$name-" >"$log" 2>&1
        local rc=$?
        # The final stats name the count number_of_executed_runs or, in newer libFuzzers, _units.
        local runs; runs=$(sed -n -E 's/^stat::number_of_executed_(runs|units): *([0-9]+).*/\2/p' "$log" | tail -n 1)
        if [ $rc -eq 0 ]; then
            echo "fuzz_$name: ${runs:-?} executions, no crash ($(ls "$scratch" | wc -l) inputs in $scratch)"
        else
            crashed=1
            local input; input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
            echo "fuzz_$name: CRASHED after ${runs:-?} executions; input: ${input:-none written (see the log)}"
            grep -m 3 -E '^==[0-9]+==ERROR|^SUMMARY|^fuzz_|runtime error' "$log" | sed 's/^/    /'
            [ -n "$input" ] && echo "    reproduce: ./build/fuzz/fuzz_$name $input"
        fi
        if [ "${DF_FUZZ_MERGE:-0}" = 1 ]; then
            # -merge=1 adds to the first directory only inputs that add coverage to it.
            TMPDIR=build/fuzz ASAN_OPTIONS=$FUZZ_ASAN_OPTIONS ./build/fuzz/fuzz_$name -merge=1 "$corpus" "$scratch" \
                -max_len=65536 -timeout=10 -rss_limit_mb=2048 >"build/fuzz/${name}_merge.log" 2>&1 ||
                { echo "fuzz_$name: merge failed (build/fuzz/${name}_merge.log)"; crashed=1; continue; }
            local added; added=$(sed -n 's/.*MERGE-OUTER: \([0-9]*\) new files.*/\1/p' "build/fuzz/${name}_merge.log" | tail -n 1)
            echo "fuzz_$name: merged ${added:-0} new inputs into $corpus"
        fi
    done
    [ $crashed -eq 0 ] || { echo "fuzz: a fuzzer failed; crashing inputs are under build/fuzz-crashes/"; exit 1; }
}

case "${1:-demo}" in
    amalgamate) amalgamate ;;
    demo|"") amalgamate; demo ;;
    test) amalgamate; run_tests ;;
    bench) amalgamate; run_bench ;;
    fuzz) amalgamate; run_fuzz ;;
    *) echo "usage: ./build.sh [amalgamate|test|bench|fuzz]" >&2; exit 2 ;;
esac
