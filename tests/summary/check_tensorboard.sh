#!/bin/sh
# Writes an event file with tests/summary/write_events.c (public API only) and checks it with
# TensorBoard's own readers (tests/summary/check_tensorboard.py). Not part of ./build.sh test:
# it needs Python with the `tensorboard` package. Run from the repository root:
#   tests/summary/check_tensorboard.sh [PYTHON]      (PYTHON defaults to $PYTHON, then .venv/bin/python, then python3)
set -eu
PY=${1:-${PYTHON:-}}
if [ -z "$PY" ]; then if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi; fi
CC=${CC:-cc}
mkdir -p build
[ -f dataflow.c ] || { echo "run from the repository root" >&2; exit 2; }
$CC -std=c11 -O1 -Wall -Wextra -Werror -I. tests/summary/write_events.c dataflow.c -o build/write_events -lm -lpthread
LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/df_tensorboard_XXXXXX")
trap 'rm -rf "$LOGDIR"' EXIT
build/write_events "$LOGDIR/run1"
"$PY" tests/summary/check_tensorboard.py "$LOGDIR"
