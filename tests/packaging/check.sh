#!/usr/bin/env bash
# tests/packaging/check.sh: the CMake and pkg-config packaging, from a user's side. For a static
# and a shared build of the library (CMakeLists.txt, Release), installed with
# `cmake --install --prefix`, tests/packaging/consumer.c is built and run three ways: through
# find_package(dataflow) (tests/packaging/find_package), add_subdirectory of the source tree
# (tests/packaging/add_subdirectory) and `cc consumer.c $(pkg-config ...)`; the static build
# also builds the examples (DATAFLOW_BUILD_EXAMPLES, on by default at the top level) and runs
# the demo. One line per check, then "N passed, N failed"; exits nonzero on any failure.
# Needs cmake, a C compiler (CC, default cc) and pkg-config (installed with apt-get where
# missing; without it the pkg-config checks are skipped, saying so).
# Works in a fresh temporary directory under build/packaging/, removed when everything passed.
# DF_PACKAGING_CMAKE_ARGS: more arguments for each cmake configure (the library's and the
# consumers'), e.g. "-DDATAFLOW_CUDA=ON" to check the packaging of the GPU build, or hints where
# a dependency is found; LDFLAGS goes to the links (cmake reads it too).
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$(pwd)
CC=${CC:-cc}
export CC
read -r -a extra_args <<<"${DF_PACKAGING_CMAKE_ARGS:-}"

have() { command -v "$1" >/dev/null 2>&1; }
try_install() {   # try_install COMMAND PACKAGE: as build.sh's need, without giving up
    have "$1" && return 0
    echo "check.sh: '$1' is needed; trying to install it" >&2
    if have apt-get; then (apt-get update -qq && apt-get install -y -qq "$2") >/dev/null 2>&1; fi
    have "$1"
}
try_install cmake cmake || { echo "check.sh: please install cmake" >&2; exit 2; }
have "$CC" || { echo "check.sh: no C compiler '$CC'" >&2; exit 2; }
with_pkg_config=1
try_install pkg-config pkg-config || with_pkg_config=0

version=$(sed -n 's/^#define DF_VERSION_STRING "\(.*\)"$/\1/p' dataflow.h)
[ -n "$version" ] || { echo "check.sh: no DF_VERSION_STRING in dataflow.h" >&2; exit 2; }
mkdir -p build/packaging
tmp=$(mktemp -d "$root/build/packaging/check.XXXXXX") || exit 2

passed=0; failed=0; skipped=0
check() {   # check NAME COMMAND...: one line; the end of the command's log when it fails
    local name=$1 log=$tmp/check$((passed + failed + 1)).log; shift
    if "$@" >"$log" 2>&1; then
        passed=$((passed + 1)); echo "ok   $name"
    else
        failed=$((failed + 1)); echo "FAIL $name (log: ${log#"$root"/})"; tail -n 30 "$log" | sed 's/^/    /'
    fi
}

# links_dataflow_dynamically PROGRAM yes|no: whether PROGRAM needs libdataflow.so at run time is
# what the library's kind says (where readelf is found).
links_dataflow_dynamically() {
    have readelf || return 0
    local needed=no
    readelf -d "$1" | grep -q 'NEEDED.*libdataflow' && needed=yes
    [ $needed = "$2" ] || { echo "$1: NEEDED libdataflow.so is '$needed', expected '$2'"; return 1; }
}

# install_library KIND SHARED EXAMPLES: configures (with a prefix that must stay unused: the
# install's --prefix is what counts), builds and installs into $tmp/KIND/prefix.
install_library() {
    local dir=$tmp/$1
    cmake -S . -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS="$2" \
        -DDATAFLOW_BUILD_EXAMPLES="$3" -DCMAKE_INSTALL_PREFIX="$dir/unused-prefix" \
        -DCMAKE_EXPORT_COMPILE_COMMANDS=ON ${extra_args[@]+"${extra_args[@]}"} || return 1
    cmake --build "$dir/build" --parallel 2 || return 1
    cmake --install "$dir/build" --prefix "$dir/prefix" || return 1
    [ ! -e "$dir/unused-prefix" ] || { echo "something was installed into the configure-time prefix"; return 1; }
    [ -f "$dir/prefix/include/dataflow.h" ] || { echo "dataflow.h was not installed"; return 1; }
    grep '"command".*-O3.*dataflow\.c' "$dir/build/compile_commands.json" | grep -q -- -DDATAFLOW_IMPLEMENTATION ||
        { echo "dataflow.c was not compiled with -O3 -DDATAFLOW_IMPLEMENTATION:"; grep dataflow.c "$dir/build/compile_commands.json"; return 1; }
}

run_demo() {
    local demo=$tmp/$1/build/examples/demo
    [ -x "$demo" ] || { echo "the examples were not built"; return 1; }
    for e in dfrun dfworker digits_mlp digits_queue digits_rnn; do
        [ -x "$tmp/$1/build/examples/$e" ] || { echo "examples/$e.c was not built"; return 1; }
    done
    (cd "$tmp/$1" && "$demo") | grep -q '27 reaches 1 after 111 steps' || { echo "the demo's output is wrong"; return 1; }
}

via_find_package() {
    local dir=$tmp/$1
    cmake -S tests/packaging/find_package -B "$dir/find_package" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$dir/prefix" -DDATAFLOW_EXPECTED_VERSION="$version" \
        ${extra_args[@]+"${extra_args[@]}"} || return 1
    cmake --build "$dir/find_package" || return 1
    "$dir/find_package/consumer" || return 1
    links_dataflow_dynamically "$dir/find_package/consumer" "$2"
}

via_add_subdirectory() {
    local dir=$tmp/$1
    cmake -S tests/packaging/add_subdirectory -B "$dir/add_subdirectory" -DBUILD_SHARED_LIBS="$3" \
        ${extra_args[@]+"${extra_args[@]}"} || return 1
    cmake --build "$dir/add_subdirectory" --parallel 2 || return 1
    "$dir/add_subdirectory/consumer" || return 1
    links_dataflow_dynamically "$dir/add_subdirectory/consumer" "$2"
}

via_pkg_config() {
    local dir=$tmp/$1 pc static="" rpath=""
    pc=$(find "$dir/prefix" -name dataflow.pc | head -n 1)
    [ -n "$pc" ] || { echo "dataflow.pc was not installed"; return 1; }
    export PKG_CONFIG_PATH
    PKG_CONFIG_PATH=$(dirname "$pc")
    [ "$(pkg-config --modversion dataflow)" = "$version" ] || { echo "pkg-config --modversion: $(pkg-config --modversion dataflow), expected $version"; return 1; }
    if [ "$2" = no ]; then
        static=--static
        pkg-config --static --libs dataflow | grep -q -- '-lm' || { echo "pkg-config --static --libs has no -lm"; return 1; }
    else
        rpath="-Wl,-rpath,$(pkg-config --variable=libdir dataflow)"
    fi
    # The flags are words to split, as a user's shell would.
    # shellcheck disable=SC2046,SC2086
    echo "$CC" tests/packaging/consumer.c $(pkg-config $static --cflags --libs dataflow) $rpath ${LDFLAGS:-}
    # shellcheck disable=SC2046,SC2086
    "$CC" tests/packaging/consumer.c $(pkg-config $static --cflags --libs dataflow) $rpath ${LDFLAGS:-} \
        -o "$dir/consumer_pkg_config" || return 1
    "$dir/consumer_pkg_config" || return 1
    links_dataflow_dynamically "$dir/consumer_pkg_config" "$2"
}

for kind in static shared; do
    shared=OFF; dynamic=no; examples=OFF
    [ $kind = shared ] && { shared=ON; dynamic=yes; }
    [ $kind = static ] && examples=ON
    check "cmake: $kind library builds (Release) and installs with --prefix" install_library $kind $shared $examples
    [ $kind = static ] && check "cmake: the examples build with the $kind library, the demo runs" run_demo $kind
    check "find_package(dataflow $version) with the $kind library: the consumer runs" via_find_package $kind $dynamic
    check "add_subdirectory with the $kind library: the consumer runs" via_add_subdirectory $kind $dynamic $shared
    if [ $with_pkg_config = 1 ]; then
        check "pkg-config$([ $kind = static ] && echo ' --static') with the $kind library: the consumer runs" via_pkg_config $kind $dynamic
    else
        skipped=$((skipped + 1)); echo "skip pkg-config with the $kind library: no pkg-config, and it could not be installed (Debian: apt-get install pkg-config)"
    fi
done

[ $skipped -gt 0 ] && echo "($skipped skipped)"
echo "$passed passed, $failed failed"
if [ $failed -eq 0 ]; then rm -rf "$tmp"; else echo "(kept for a look: ${tmp#"$root"/})"; fi
[ $failed -eq 0 ]
