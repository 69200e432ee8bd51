#!/usr/bin/env bash
# Idempotent setup of the TensorFlow peer for the executor benchmarks.
# Creates a git-ignored virtualenv at <repo>/.venv and installs
# tensorflow-cpu and numpy into it unless they are already importable.
# Usage: bench/peers/setup.sh   (from anywhere)
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$root/.venv"
py="$venv/bin/python"
PYTHON3="${PYTHON3:-python3}"

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

if ! ver="$("$py" -c "$check" 2>/dev/null)"; then
    log="$(mktemp)"
    # tensorflow-cpu has x86_64 wheels only; elsewhere fall back to tensorflow.
    if ! "$py" -m pip install --quiet --disable-pip-version-check \
            tensorflow-cpu numpy >"$log" 2>&1 &&
       ! "$py" -m pip install --quiet --disable-pip-version-check \
            tensorflow numpy >>"$log" 2>&1; then
        echo "setup.sh: error: pip install tensorflow-cpu numpy failed (no network, or no wheel for this Python/platform); pip said: $(grep -m1 ERROR "$log" || tail -n 1 "$log")" >&2
        rm -f "$log"
        exit 1
    fi
    rm -f "$log"
    if ! ver="$("$py" -c "$check" 2>/dev/null)"; then
        echo "setup.sh: error: tensorflow installed but does not import in $venv" >&2
        exit 1
    fi
fi

echo "venv: $venv (python: $py, tensorflow $ver)"
