"""Writes TensorBoard event files with TensorBoard's own writer, for Falcon's tfevents reader tests.

    "$(bash examples/tfevents/setup.sh)" examples/tfevents/write_events.py [OUT_DIR]

OUT_DIR defaults to crates/falcon-analysis/tests/data/tfevents. It gets:

- ``run/events.out.tfevents.1700000000.falcon-example.1000.0``: the first run, steps 0..59. ``lm loss``,
  ``grad-norm``, ``learning-rate`` as ``simple_value`` (all three in one Summary per step, as TF1's
  ``FileWriter.add_summary`` writes a merged summary), step 20 of ``lm loss`` written twice (the later value
  must win); tensor-form scalars: ``learning/lm_loss`` (``scalar_pb``: DT_FLOAT ``float_val`` + plugin
  ``scalars``), ``perf/step_time_seconds`` (DT_DOUBLE ``double_val``; metadata only on the tag's first event,
  as TF1's FileWriter strips it), ``fp16/loss_scale`` (DT_HALF ``half_val``), ``bf16/grad_norm``
  (DT_BFLOAT16 ``half_val``), ``counters/tokens`` (DT_INT64 ``int64_val``), ``counters/samples``
  (DT_INT32 ``int_val``), ``content/lr`` (DT_FLOAT shape [] in ``tensor_content``, as TF2 writes scalars),
  ``content/loss_f64`` (DT_DOUBLE shape [1, 1] in ``tensor_content``); and values the reader must skip: a
  histogram (``histogram_pb``, plugin ``histograms``), an old-style ``histo``, an ``image``, a text summary
  (``text_pb``, DT_STRING), a non-scalar float tensor.
- ``run/events.out.tfevents.1700003600.falcon-example.1001.0``: the restart from the step-50 checkpoint,
  steps 50..99 with slightly different values for 50..59 (reading the directory, the later file wins), one
  event per scalar (as torch's ``SummaryWriter.add_scalar`` writes), and ``learning/lm_loss`` every 10 steps.
- ``expected.json``: every scalar the reader must return per file, as ``[tag, step, value, f64_bits]`` rows
  (``f64_bits``: hex of the f64 the reader must give: the stored float32/fp16/bf16 widened exactly, or the
  stored double), plus the skipped values per file; reading ``run/`` merges the files in name order, a later
  file winning per (tag, step).

The files are read back with TensorBoard's own loader (``event_file_loader`` + ``tensor_util.make_ndarray``),
which must give the same scalars. Everything is deterministic (fixed formulas; the writer's clock and the file
names are fixed), so rerunning gives the same bytes.
"""

import json
import math
import os
import shutil
import struct
import sys
import tempfile
import types
from importlib.metadata import version

import numpy as np
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.histogram import summary_v2 as histogram_summary
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.scalar import summary_v2 as scalar_summary
from tensorboard.plugins.text import summary_v2 as text_summary
from tensorboard.summary.writer import event_file_writer
from tensorboard.util import tensor_util

HOST = "falcon-example"


def f32(x):
    """The float32 nearest x, as the Python float (f64) a reader widening it exactly must return."""
    return float(np.float32(x))


def bits(x):
    """Hex of x's f64 bit pattern."""
    return "0x%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0]


def bf16_bits(x):
    """bfloat16 bits of float32(x), rounded to nearest even (what ml_dtypes / TF do)."""
    u = struct.unpack("<I", struct.pack("<f", np.float32(x)))[0]
    u += 0x7FFF + ((u >> 16) & 1)
    return (u >> 16) & 0xFFFF


def bf16_value(b):
    return float(struct.unpack("<f", struct.pack("<I", b << 16))[0])


def lm_loss(step, restart=False):
    v = 10.5 * math.exp(-step / 30.0) + 2.0 + 0.05 * math.sin(step)
    return v + (0.001 * (step % 7 + 1) if restart and step < 60 else 0.0)


def grad_norm(step, restart=False):
    return 1.0 + 0.5 * math.cos(step / 7.0) + (0.0005 if restart and step < 60 else 0.0)


def learning_rate(step):
    return 3e-4 * min(1.0, (step + 1) / 10.0) * (0.5 * (1 + math.cos(math.pi * step / 100.0)))


def scalars_metadata():
    return scalar_metadata.create_summary_metadata(display_name=None, description=None)


class Run:
    """One event file, written by tensorboard's EventFileWriter, plus what a reader must make of it."""

    def __init__(self, tmp, secs, pid, counter):
        self.secs = secs
        self.name = "events.out.tfevents.%010d.%s.%d.%d" % (secs, HOST, pid, counter)
        # Fix the writer's clock (it stamps the first event's wall_time and names the file with it) so the
        # bytes do not change between runs; the file is renamed to a fixed host/pid after closing.
        event_file_writer.time = types.SimpleNamespace(time=lambda: float(secs))
        self.dir = os.path.join(tmp, str(secs))
        self.writer = event_file_writer.EventFileWriter(self.dir, max_queue_size=1000, flush_secs=3600)
        self.scalars = {}  # (tag, step) -> value (f64 the reader must return); later wins
        self.skipped = {}  # tag -> count
        self.seen_tags = set()

    def event(self, step, values, wall=None):
        """Writes one Event with a Summary of the given Summary.Value protos."""
        summary = summary_pb2.Summary(value=values)
        wall = float(self.secs + step) if wall is None else wall
        self.writer.add_event(event_pb2.Event(wall_time=wall, step=step, summary=summary))

    def simple(self, tag, step, value):
        self.scalars[(tag, step)] = f32(value)
        return summary_pb2.Summary.Value(tag=tag, simple_value=value)

    def tensor(self, tag, step, tensor, expected, metadata_once=False):
        """A tensor-form scalar with plugin `scalars` metadata (only on the tag's first event if metadata_once)."""
        value = summary_pb2.Summary.Value(tag=tag, tensor=tensor)
        if not (metadata_once and tag in self.seen_tags):
            value.metadata.CopyFrom(scalars_metadata())
        self.seen_tags.add(tag)
        self.scalars[(tag, step)] = expected
        return value

    def skip(self, value):
        self.skipped[value.tag] = self.skipped.get(value.tag, 0) + 1
        return value

    def close(self, out_dir):
        self.writer.close()
        (written,) = os.listdir(self.dir)
        shutil.move(os.path.join(self.dir, written), os.path.join(out_dir, self.name))

    def expected(self):
        return {
            "scalars": [[tag, step, value, bits(value)] for (tag, step), value in sorted(self.scalars.items())],
            "skipped": dict(sorted(self.skipped.items())),
        }


def dump(expected):
    """JSON with one scalar row per line (small diffs, a few tens of KB)."""
    lines = ["{"]
    lines.append(' "writer": %s,' % json.dumps(expected["writer"]))
    lines.append(' "rows": %s,' % json.dumps(expected["rows"]))
    lines.append(' "merge": %s,' % json.dumps(expected["merge"]))
    lines.append(' "files": {')
    files = list(expected["files"].items())
    for i, (name, f) in enumerate(files):
        lines.append('  %s: {' % json.dumps(name))
        lines.append('   "skipped": %s,' % json.dumps(f["skipped"]))
        lines.append('   "scalars": [')
        rows = [json.dumps(r) for r in f["scalars"]]
        lines.append(",\n".join("    " + r for r in rows))
        lines.append("   ]")
        lines.append("  }" + ("," if i + 1 < len(files) else ""))
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def first_run(run):
    for step in range(60):
        values = [
            run.simple("lm loss", step, lm_loss(step)),
            run.simple("grad-norm", step, grad_norm(step)),
            run.simple("learning-rate", step, learning_rate(step)),
        ]
        run.event(step, values)
        if step == 20:
            # The same step again (e.g. a logging retry): the later record wins.
            run.event(step, [run.simple("lm loss", step, lm_loss(step) + 0.25)])

        if step % 5 == 0:
            # MaxText-style tensor scalar via tensorboard's own scalar_pb (DT_FLOAT, float_val, plugin scalars).
            (v,) = scalar_summary.scalar_pb("learning/lm_loss", lm_loss(step)).value
            run.scalars[("learning/lm_loss", step)] = f32(lm_loss(step))
            run.seen_tags.add("learning/lm_loss")
            values = [v]
            # DT_DOUBLE (double_val); metadata only on the first event of the tag.
            t = 0.125 + step / 1024.0 + 1e-9 * step
            values.append(run.tensor("perf/step_time_seconds", step,
                                     tensor_util.make_tensor_proto(np.float64(t)), float(t), metadata_once=True))
            # DT_HALF (half_val holds the fp16 bits).
            scale = np.float16(2.0 ** (step // 20 + 10) + step * 0.37)
            values.append(run.tensor("fp16/loss_scale", step, tensor_util.make_tensor_proto(scale), float(scale)))
            # DT_BFLOAT16 (half_val holds the bf16 bits); numpy has no bfloat16, so the proto is built by hand.
            b = bf16_bits(grad_norm(step))
            bf = tensor_pb2.TensorProto(dtype=types_pb2.DT_BFLOAT16, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                        half_val=[b])
            values.append(run.tensor("bf16/grad_norm", step, bf, bf16_value(b)))
            # Integers: DT_INT64 (int64_val), DT_INT32 (int_val).
            tokens = (step + 1) * 4096 * 2048 + 3
            values.append(run.tensor("counters/tokens", step, tensor_util.make_tensor_proto(np.int64(tokens)),
                                     float(tokens)))
            values.append(run.tensor("counters/samples", step,
                                     tensor_util.make_tensor_proto(np.int32((step + 1) * 256)), float((step + 1) * 256)))
            # One-element tensors whose value is in tensor_content (little-endian raw bytes), as TF2's
            # tf.summary.scalar writes them (C++ AsProtoTensorContent); tensorboard's make_tensor_proto only uses
            # tensor_content above one element, so the value is moved there from float_val / double_val.
            lr = np.float32(learning_rate(step))
            tc = tensor_util.make_tensor_proto(lr)
            tc.ClearField("float_val")
            tc.tensor_content = lr.tobytes()
            values.append(run.tensor("content/lr", step, tc, float(lr)))
            loss64 = np.array([[lm_loss(step) / 3.0]], dtype=np.float64)
            tc = tensor_util.make_tensor_proto(loss64)
            tc.ClearField("double_val")
            tc.tensor_content = loss64.tobytes()
            values.append(run.tensor("content/loss_f64", step, tc, float(loss64[0, 0])))
            run.event(step, values)

        if step % 20 == 0:
            # Values the reader must skip.
            data = np.linspace(-1.0, 1.0, 16) * (1 + step / 100.0)
            (h,) = histogram_summary.histogram_pb("histogram/weights", data, buckets=4).value
            (txt,) = text_summary.text_pb("text/config", "step %d: lr schedule cosine" % step).value
            old = summary_pb2.Summary.Value(
                tag="histogram/old_style",
                histo=summary_pb2.HistogramProto(min=-1.0, max=1.0, num=16, sum=0.0, sum_squares=5.0,
                                                 bucket_limit=[-0.5, 0.0, 0.5, 1.0], bucket=[4, 4, 4, 4]))
            img = summary_pb2.Summary.Value(
                tag="image/sample",
                image=summary_pb2.Summary.Image(height=1, width=1, colorspace=1, encoded_image_string=b"\x89PNG"))
            vec = summary_pb2.Summary.Value(
                tag="tensor/non_scalar",
                tensor=tensor_util.make_tensor_proto(np.arange(4, dtype=np.float32) * step))
            run.event(step, [run.skip(h), run.skip(txt), run.skip(old), run.skip(img), run.skip(vec)])


def restart_run(run):
    for step in range(50, 100):
        # torch SummaryWriter.add_scalar style: one event per scalar.
        run.event(step, [run.simple("lm loss", step, lm_loss(step, restart=True))])
        run.event(step, [run.simple("grad-norm", step, grad_norm(step, restart=True))])
        run.event(step, [run.simple("learning-rate", step, learning_rate(step))])
        if step % 10 == 0:
            (v,) = scalar_summary.scalar_pb("learning/lm_loss", lm_loss(step, restart=True)).value
            run.scalars[("learning/lm_loss", step)] = f32(lm_loss(step, restart=True))
            run.event(step, [v])


def check_with_tensorboard_reader(path, run):
    """Reads the file back with TensorBoard's own loader and tensor_util.make_ndarray: the same scalars as
    expected (bfloat16 aside: make_ndarray cannot decode it without TensorFlow; its bits are checked above)."""
    got, plugin = {}, {}
    for record in event_file_loader.RawEventFileLoader(path).Load():
        event = event_pb2.Event.FromString(record)
        for v in event.summary.value:
            if v.HasField("metadata"):
                plugin[v.tag] = v.metadata.plugin_data.plugin_name
            if v.HasField("simple_value"):
                got[(v.tag, event.step)] = float(v.simple_value)
            elif (v.HasField("tensor") and plugin.get(v.tag, "") in ("", "scalars")
                  and v.tensor.dtype != types_pb2.DT_BFLOAT16):
                a = tensor_util.make_ndarray(v.tensor)
                if a.size == 1:
                    got[(v.tag, event.step)] = float(a.reshape(()))
    want = {k: v for k, v in run.scalars.items() if not k[0].startswith("bf16/")}
    assert got == want, sorted(set(got.items()) ^ set(want.items()))[:10]


def main():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(repo, "crates/falcon-analysis/tests/data/tfevents")
    run_dir = os.path.join(out, "run")
    os.makedirs(run_dir, exist_ok=True)
    for name in os.listdir(run_dir):
        if "tfevents" in name:
            os.remove(os.path.join(run_dir, name))

    with tempfile.TemporaryDirectory() as tmp:
        first = Run(tmp, 1700000000, 1000, 0)
        first_run(first)
        first.close(run_dir)
        second = Run(tmp, 1700003600, 1001, 0)
        restart_run(second)
        second.close(run_dir)

    for run in (first, second):
        check_with_tensorboard_reader(os.path.join(run_dir, run.name), run)

    merged = dict(first.scalars)
    merged.update(second.scalars)
    expected = {
        "writer": "tensorboard %s (tensorboard.summary.writer.event_file_writer.EventFileWriter), protobuf %s"
        % (version("tensorboard"), version("protobuf")),
        "rows": "[tag, step, value, f64_bits]: value as the f64 the reader must return (float32/fp16/bf16 widened "
        "exactly, or the stored double); f64_bits its bit pattern in hex",
        "merge": "reading run/ gives the files' scalars merged in file-name order, a later file winning per (tag, step)",
        "files": {first.name: first.expected(), second.name: second.expected()},
    }
    with open(os.path.join(out, "expected.json"), "w") as f:
        f.write(dump(expected))
    json.load(open(os.path.join(out, "expected.json")))
    for name in sorted(os.listdir(run_dir)):
        print("%s: %d bytes" % (os.path.join(run_dir, name), os.path.getsize(os.path.join(run_dir, name))))
    print("%s: %d scalars merged" % (os.path.join(out, "expected.json"), len(merged)))


if __name__ == "__main__":
    main()
