"""Writes tests/summary/fixtures/tf_writer.tfevents: a small event file made by TensorFlow's own
tf.summary writer (file_version, a scalar, a histogram, a text summary, at steps 0..2), which
tests/test_summary.c reads back through df_record_reader (every crc checked) and re-frames.

Run from the repository root:  /work/main/.venv/bin/python tests/summary/make_event_fixture.py
(any Python with tensorflow works). Not part of the test build: the fixture is committed."""
import glob
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "fixtures", "tf_writer.tfevents")
tmp = tempfile.mkdtemp()
try:
    w = tf.summary.create_file_writer(tmp)
    with w.as_default():
        for step in range(3):
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
            tf.summary.histogram("weights", [0.5 * step, 1.0, 2.0, -1.0], step=step, buckets=4)
        tf.summary.text("note", "made by TensorFlow " + tf.__version__, step=0)
    w.close()
    files = glob.glob(os.path.join(tmp, "events.out.tfevents.*"))
    if len(files) != 1:
        sys.exit("expected one event file, got %r" % files)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    shutil.copyfile(files[0], out)
    print("wrote %s (%d bytes)" % (out, os.path.getsize(out)))
finally:
    shutil.rmtree(tmp)
