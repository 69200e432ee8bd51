"""Reads a log directory written by tests/summary/write_events.c with TensorBoard's own readers
and checks every value: the scalars "loss" and "accuracy" (steps 0..9), the histogram "weights"
(steps 0 and 5), the graph (GraphDef parsed, its nodes and scopes), and the session graphs under
"session" and "session/optimized" as TensorBoard's graph plugin serves them (op graph and
profile). Exits 1 on any mismatch, printing each one.

Usage: python tests/summary/check_tensorboard.py LOGDIR
(tests/summary/check_tensorboard.sh builds write_events, runs it and then this.)
Needs the `tensorboard` package (and, for its RunMetadata protos, nothing else); not part of
./build.sh test."""
import os
import struct
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402
from tensorboard.compat.proto import config_pb2  # noqa: E402

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("MISMATCH: " + what)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def check_accumulator(run_dir):
    acc = ea.EventAccumulator(
        run_dir,
        size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0, ea.GRAPH: 0},
    )
    acc.Reload()
    tags = acc.Tags()
    expect(sorted(tags["scalars"]) == ["accuracy", "loss"], "scalar tags %r" % tags["scalars"])
    expect(tags["histograms"] == ["weights"], "histogram tags %r" % tags["histograms"])
    expect(tags["graph"], "no graph")

    for tag, value in (("loss", lambda s: 1.0 / (s + 1)), ("accuracy", lambda s: s / 10.0)):
        events = acc.Scalars(tag)
        expect([e.step for e in events] == list(range(10)), "%s steps %r" % (tag, [e.step for e in events]))
        for e in events:
            want = f32(value(e.step))   # float32 division, correctly rounded
            expect(e.value == want, "%s at step %d: %r, want %r" % (tag, e.step, e.value, want))
            expect(e.wall_time > 1.5e9, "%s wall_time %r" % (tag, e.wall_time))

    hist = acc.Histograms("weights")
    expect([h.step for h in hist] == [0, 5], "histogram steps %r" % [h.step for h in hist])
    limits = [-1.0, 0.0, 1.0, 1e300]
    for h in hist:
        x = [-1.5, -0.25, 0.0, 0.5 + h.step, 1.0, 2.0]
        v = h.histogram_value
        counts = [0.0] * 4
        for xi in x:
            b = 0
            while b < 3 and xi > limits[b]:
                b += 1
            counts[b] += 1
        want = dict(min=min(x), max=max(x), num=6.0, sum=sum(x), sum_squares=sum(t * t for t in x))
        for k, w in want.items():
            expect(abs(getattr(v, k) - w) <= 1e-12 * max(1.0, abs(w)),
                   "histogram step %d %s: %r, want %r" % (h.step, k, getattr(v, k), w))
        expect(list(v.bucket_limit) == limits, "histogram step %d limits %r" % (h.step, list(v.bucket_limit)))
        expect(list(v.bucket) == counts, "histogram step %d buckets %r, want %r" % (h.step, list(v.bucket), counts))

    g = acc.Graph()
    names = {n.name: n for n in g.node}
    for want in ("x", "layer1/Mul", "layer1/AddV2"):
        expect(want in names, "graph lacks %s (has %s)" % (want, sorted(names)))
    if "layer1/Mul" in names:
        expect(names["layer1/Mul"].op == "Mul", "layer1/Mul op %r" % names["layer1/Mul"].op)
        expect(names["layer1/Mul"].input[0] == "x", "layer1/Mul inputs %r" % list(names["layer1/Mul"].input))
        expect("cpu:1" in names["layer1/Mul"].device.lower(), "layer1/Mul device %r" % names["layer1/Mul"].device)
    expect(names.get("x") is not None and names["x"].op == "Placeholder", "x is not a Placeholder")

    # session graphs: string tensors holding RunMetadata
    for tag in ("session", "session/optimized"):
        ts = acc.Tensors(tag)
        expect(len(ts) == 1 and ts[0].step == 10, "%s: %d tensor events" % (tag, len(ts)))
        if not ts:
            continue
        rm = config_pb2.RunMetadata.FromString(ts[0].tensor_proto.string_val[0])
        if tag == "session":
            expect(len(rm.partition_graphs) == 2, "session: %d partition graphs" % len(rm.partition_graphs))
            ops = [n.op for pg in rm.partition_graphs for n in pg.node]
            expect("_Send" in ops and "_Recv" in ops, "session partitions lack _Send/_Recv: %r" % ops)
        expect(len(rm.function_graphs) == (2 if tag == "session" else 1),
               "%s: %d function graphs" % (tag, len(rm.function_graphs)))
        n_stats = sum(len(d.node_stats) for d in rm.step_stats.dev_stats)
        expect(n_stats > 0, "%s: no step stats" % tag)
        for d in rm.step_stats.dev_stats:
            for s in d.node_stats:
                expect(s.all_end_rel_micros == 2 and s.memory[0].total_bytes == 12,
                       "%s: stats of %s: %s" % (tag, s.node_name, s))


def check_graph_plugin(logdir):
    """What TensorBoard's graph page gets: the run graph, the op graph and the profile per tag."""
    from tensorboard import context
    from tensorboard.backend.event_processing import data_provider
    from tensorboard.backend.event_processing import plugin_event_multiplexer
    from tensorboard.compat.proto import graph_pb2
    from tensorboard.plugins import base_plugin
    from tensorboard.plugins.graph import graphs_plugin
    from google.protobuf import text_format

    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(logdir)
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, logdir)
    plugin = graphs_plugin.GraphsPlugin(base_plugin.TBContext(logdir=logdir, data_provider=provider, multiplexer=mux))
    ctx = context.RequestContext()
    info = plugin.info_impl(ctx, "")
    run = info.get("run1")
    expect(run is not None and run["run_graph"], "graph plugin: no run graph (%r)" % info)
    if not run:
        return
    for tag in ("session", "session/optimized"):
        t = run["tags"].get(tag)
        expect(t is not None and t["op_graph"] and t["profile"], "graph plugin: tag %s is %r" % (tag, t))
    body, _ = plugin.graph_impl(ctx, "run1", None, False, experiment="")
    g = text_format.Parse(body, graph_pb2.GraphDef())
    expect(any(n.name == "layer1/Mul" for n in g.node), "graph plugin: run graph lacks layer1/Mul")
    body, _ = plugin.graph_impl(ctx, "run1", "session", False, experiment="")
    g = text_format.Parse(body, graph_pb2.GraphDef())
    names = [n.name for n in g.node]
    expect(any(n.startswith("graph_1/") for n in names) and any(n.startswith("graph_2/") for n in names),
           "graph plugin: session op graph is not both partitions: %r" % names)
    expect(any(n.op == "_Send" for n in g.node), "graph plugin: session op graph has no _Send")
    body, _ = plugin.graph_impl(ctx, "run1", "session/optimized", False, experiment="")
    g = text_format.Parse(body, graph_pb2.GraphDef())
    expect(any(n.name == "layer1/Mul" for n in g.node), "graph plugin: optimized graph lacks layer1/Mul")
    body, _ = plugin.run_metadata_impl(ctx, "", "run1", "session")
    rm = text_format.Parse(body, config_pb2.RunMetadata())
    stat_names = {s.node_name for d in rm.step_stats.dev_stats for s in d.node_stats}
    expect(stat_names and stat_names <= set(names),
           "graph plugin: profile names %r not all in the drawn graph" % sorted(stat_names - set(names)))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    logdir = sys.argv[1]
    check_accumulator(os.path.join(logdir, "run1"))
    check_graph_plugin(logdir)
    if failures:
        print("check_tensorboard: %d mismatches" % len(failures))
        sys.exit(1)
    print("check_tensorboard: TensorBoard reads every scalar, histogram and graph as written")


if __name__ == "__main__":
    main()
