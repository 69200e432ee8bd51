#!/usr/bin/env bash
# TensorBoard in a real browser (not part of CI: it needs Python, TensorBoard and Chromium).
# Trains the digits MLP with --logdir, starts TensorBoard on that directory, asks its scalars
# API for the loss curve (every step logged must be there), and takes a headless-Chromium
# screenshot of the scalars page to look at. Run from the repository root:
#     tests/summary/browser_check.sh [OUTDIR]          (default build/tensorboard_check)
# TensorBoard comes from .venv (installed there if missing); Chromium from apt-get.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build/tensorboard_check}
rm -rf "$out"; mkdir -p "$out"
py=.venv/bin/python
[ -x "$py" ] || python3 -m venv .venv
"$py" -c "import tensorboard" 2>/dev/null || .venv/bin/pip install -q tensorboard
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$browser" ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null 2>&1 || true
    browser=$(command -v chromium || true)
fi

./build.sh amalgamate >/dev/null
cc -std=c11 -O2 -I. examples/digits_mlp.c dataflow.c -o "$out/digits_mlp" -lm -lpthread
"$out/digits_mlp" data/digits.csv.gz --logdir "$out/logs/mlp" --trace "$out/step.trace.json" | tee "$out/train.log"
steps=$(sed -n 's/^mean training step: .* (\([0-9]*\) steps.*/\1/p' "$out/train.log")

port=$((16006 + RANDOM % 1000))
"$py" -m tensorboard.main --logdir "$out/logs" --port "$port" --host localhost >"$out/tensorboard.log" 2>&1 &
tb=$!
trap 'kill $tb 2>/dev/null || true' EXIT
ok=0
for _ in $(seq 1 60); do
    curl -sf "http://localhost:$port/data/runs" >/dev/null 2>&1 && { ok=1; break; }
    sleep 1
done
[ "$ok" = 1 ] || { echo "TensorBoard did not start:"; tail -5 "$out/tensorboard.log"; exit 1; }
# The curve TensorBoard serves: one point per training step, steps 1..N in order.
curl -sf "http://localhost:$port/data/plugin/scalars/scalars?run=mlp&tag=loss/step" > "$out/loss_step.json"
"$py" - "$out/loss_step.json" "$steps" <<'PY'
import json, sys
pts = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
steps = [p[1] for p in pts]
assert steps == list(range(1, n + 1)), ("steps", steps[:5], len(steps), n)
assert pts[0][2] > pts[-1][2], "the loss did not fall"
print(f"TensorBoard serves loss/step: {len(pts)} points, {pts[0][2]:.3f} -> {pts[-1][2]:.3f}")
PY
curl -sf "http://localhost:$port/data/plugin/histograms/tags" > "$out/histogram_tags.json"
grep -q '"w1"' "$out/histogram_tags.json" || { echo "no w1 histogram in $(cat "$out/histogram_tags.json")"; exit 1; }
curl -sf "http://localhost:$port/data/plugin/graphs/graph?run=mlp" > "$out/graph.pbtxt"
grep -q 'MatMul' "$out/graph.pbtxt" || { echo "the graph TensorBoard serves has no MatMul"; exit 1; }
echo "TensorBoard serves the histograms ($(tr -d '\n' < "$out/histogram_tags.json" | head -c 200)) and the graph ($(grep -c '^node' "$out/graph.pbtxt") nodes)"

if [ -n "$browser" ]; then
    for page in scalars histograms graphs; do
        "$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,1000 \
            --virtual-time-budget=20000 --screenshot="$out/$page.png" "http://localhost:$port/#$page" >/dev/null 2>&1 || true
        [ -s "$out/$page.png" ] && echo "screenshot: $out/$page.png" || { echo "no screenshot of $page"; exit 1; }
    done
else
    echo "(no Chromium: screenshots skipped)"
fi
echo "TensorBoard check passed"
