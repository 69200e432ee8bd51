"""TensorFlow's side of bench_graphdef: for each GraphDef named on the command line, the median
time of tf.compat.v1.import_graph_def into a fresh graph (parsing included), and, where a
manifest and expected outputs are given, whether TensorFlow runs our exported GraphDef to the
same results (tests/graphdef/check_export.py's comparison).

Usage: tf_graphdef.py CASE GRAPH.pb [MANIFEST DIR] ... (groups of four; "-" for no manifest)
Prints lines "import CASE MICROSECONDS" and "check CASE ok|FAIL text"."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "graphdef"))

import numpy as np                      # noqa: E402
import tensorflow as tf                 # noqa: E402
from peer_util import out, info, median_us   # noqa: E402
from check_export import read_manifest, compare   # noqa: E402


def import_once(data):
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString(data)
    with tf.Graph().as_default():
        tf.compat.v1.import_graph_def(gd, name="")


def check(data, manifest, folder):
    feeds, fetches, devices = read_manifest(manifest)
    gd = tf.compat.v1.GraphDef()
    gd.ParseFromString(data)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(gd, name="")
    feed_dict = {graph.get_tensor_by_name(n): np.load(os.path.join(folder, f)) for n, f in feeds}
    config = tf.compat.v1.ConfigProto(device_count={"CPU": devices})
    with tf.compat.v1.Session(graph=graph, config=config) as sess:
        got = sess.run([graph.get_tensor_by_name(n) for n, _ in fetches], feed_dict=feed_dict)
    worst = ""
    for (name, f), g in zip(fetches, got):
        ok, text = compare(g, np.load(os.path.join(folder, f)))
        if not ok:
            return False, "%s: %s" % (name, text)
        worst = text
    return True, "%d fetches agree (last: %s)" % (len(fetches), worst)


def main(argv):
    tf.compat.v1.disable_eager_execution()
    info("tensorflow %s" % tf.__version__)
    args = argv[1:]
    if len(args) % 4:
        print("usage: tf_graphdef.py CASE GRAPH.pb MANIFEST|- DIR|- ...", file=sys.stderr)
        return 2
    for i in range(0, len(args), 4):
        case, path, manifest, folder = args[i:i + 4]
        with open(path, "rb") as f:
            data = f.read()
        reps = 5 if len(data) > 200000 else 21
        out("import %s %.1f" % (case, median_us(lambda: import_once(data), 2, reps)))
        if manifest != "-":
            try:
                ok, text = check(data, manifest, folder)
            except Exception as e:      # a GraphDef TensorFlow refuses is a failed check
                ok, text = False, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
            out("check %s %s %s" % (case, "ok" if ok else "FAIL", text))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
