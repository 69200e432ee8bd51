#!/usr/bin/env bash
# Idempotent setup of the peers for the benchmarks (TensorFlow for the executor
# and training benchmarks, PyTorch for the training benchmark, OpenBLAS for the
# GEMM benchmark).
# OpenBLAS: when libopenblas.so.0 is not found, the Debian package
# libopenblas-dev is installed through apt-get where apt-get works (as root, or
# through sudo without a password); otherwise a note is printed and the GEMM
# benchmark prints dataflow's figures alone. It never changes the exit status.
# Creates a git-ignored virtualenv at <repo>/.venv and installs
# tensorflow-cpu and numpy into it unless they are already importable, then
# torch (the CPU build from download.pytorch.org; if that index cannot be
# reached, torch from PyPI, a large download with CUDA libraries).
# The exit status says whether TensorFlow is usable; a PyTorch that cannot be
# installed is reported and its benchmark rows are skipped.
# Usage: bench/peers/setup.sh   (from anywhere)
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$root/.venv"
py="$venv/bin/python"
PYTHON3="${PYTHON3:-python3}"

# OpenBLAS first: bench_gemm loads it at run time, and it needs no Python.
openblas_present() {
    local ldc
    for ldc in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
        if command -v "$ldc" >/dev/null 2>&1; then
            "$ldc" -p 2>/dev/null | grep -q 'libopenblas\.so\.0' && return 0
            break
        fi
    done
    local f
    for f in /usr/lib/*/libopenblas.so.0 /usr/lib/libopenblas.so.0 /usr/lib64/libopenblas.so.0 \
             /usr/local/lib/libopenblas.so.0; do
        [ -e "$f" ] && return 0
    done
    return 1
}
openblas=present
if ! openblas_present; then
    openblas=unavailable
    as_root=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1 && as_root="sudo -n"
    fi
    limit=""
    command -v timeout >/dev/null 2>&1 && limit="timeout 600"
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup.sh: note: OpenBLAS not found and no apt-get; bench_gemm prints dataflow's figures alone (install OpenBLAS to compare)" >&2
    elif [ "$(id -u)" != 0 ] && [ -z "$as_root" ]; then
        echo "setup.sh: note: OpenBLAS not found; installing libopenblas-dev needs root (apt-get install libopenblas-dev); bench_gemm prints dataflow's figures alone" >&2
    else
        echo "setup.sh: installing libopenblas-dev with apt-get (once)" >&2
        export DEBIAN_FRONTEND=noninteractive
        # the package lists may be stale or absent: install, else update and install again
        if { $as_root $limit apt-get install -y -qq libopenblas-dev ||
             { $as_root $limit apt-get update -qq && $as_root $limit apt-get install -y -qq libopenblas-dev; }; } >/dev/null 2>&1 &&
           openblas_present; then
            openblas=installed
        else
            echo "setup.sh: note: apt-get install libopenblas-dev failed (no network?); bench_gemm prints dataflow's figures alone" >&2
        fi
    fi
fi

if ! command -v "$PYTHON3" >/dev/null 2>&1; then
    echo "setup.sh: error: $PYTHON3 not found; install python3 (and python3-venv)" >&2
    exit 1
fi

if [ ! -x "$py" ]; then
    if ! "$PYTHON3" -m venv "$venv" >/dev/null 2>&1; then
        rm -rf "$venv"
        echo "setup.sh: error: '$PYTHON3 -m venv' failed (on Debian: apt-get install python3-venv)" >&2
        exit 1
    fi
fi

check='import os; os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy, tensorflow as tf; print(tf.__version__)'
torch_check='import numpy, torch; print(torch.__version__)'
pip_install() { "$py" -m pip install --quiet --disable-pip-version-check "$@"; }

tf_ok=1
if ! ver="$("$py" -c "$check" 2>/dev/null)"; then
    log="$(mktemp)"
    # tensorflow-cpu has x86_64 wheels only; elsewhere fall back to tensorflow.
    if ! pip_install tensorflow-cpu numpy >"$log" 2>&1 &&
       ! pip_install tensorflow numpy >>"$log" 2>&1; then
        echo "setup.sh: error: pip install tensorflow-cpu numpy failed (no network, or no wheel for this Python/platform); pip said: $(grep -m1 ERROR "$log" || tail -n 1 "$log")" >&2
        tf_ok=0
    elif ! ver="$("$py" -c "$check" 2>/dev/null)"; then
        echo "setup.sh: error: tensorflow installed but does not import in $venv" >&2
        tf_ok=0
    fi
    rm -f "$log"
fi

if ! tver="$("$py" -c "$torch_check" 2>/dev/null)"; then
    log="$(mktemp)"
    echo "setup.sh: installing torch and numpy into $venv (once; this can take minutes)" >&2
    if ! pip_install --retries 1 --timeout 15 torch numpy --index-url https://download.pytorch.org/whl/cpu >"$log" 2>&1 &&
       ! pip_install torch numpy >>"$log" 2>&1; then
        echo "setup.sh: warning: pip install torch failed; the PyTorch rows of the training benchmark are skipped; pip said: $(grep -m1 ERROR "$log" || tail -n 1 "$log")" >&2
        tver=""
    elif ! tver="$("$py" -c "$torch_check" 2>/dev/null)"; then
        echo "setup.sh: warning: torch installed but does not import in $venv; the PyTorch rows are skipped" >&2
        tver=""
    fi
    rm -f "$log"
fi

echo "venv: $venv (python: $py, tensorflow ${ver:-unavailable}, torch ${tver:-unavailable}); openblas $openblas"
[ "$tf_ok" = 1 ]
