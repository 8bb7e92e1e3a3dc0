"""Count (and time on this CPU) the ops TensorFlow 1 runs per decoder timestep in
DeepLearningExamples' TensorFlow GNMT training graph -- the per-timestep while-loop that
embsim's zoo gnmt (cuDNN-style fused LSTM steps) does not model (docs/heldout-tf1-gnmt.md).

Not part of embsim and not run by the tests: it needs TensorFlow (a scratch venv:
`pip install tensorflow-cpu==2.15.0`) and DLE's TF1 GNMT sources at a6c678ef (the parent of
the TF1 retirement, 9de48bc9):

    git -C DLE show a6c678ef:TensorFlow/Translation/GNMT/...   # or a worktree at that commit
    python benchmarks/tf1_gnmt_decoder_ops.py DLE/TensorFlow/Translation/GNMT [--time]

The decoder is built as gnmt_model.py builds it for training with nmt.py's defaults:
LSTMCell (use_block_lstm False), DropoutWrapper 0.2, gnmt_residual_fn ResidualWrapper on
the upper two of four layers, the normed-Bahdanau AttentionWrapper on the bottom cell
(use_defun / use_xla false), GNMTAttentionMultiCell, tf.nn.dynamic_rnn (parallel_iterations
10, time-major), in TF1 control flow (tf.compat.v1, control flow v1), then tf.gradients.
Prints the ops of each while-loop frame by type; Enter and Exit run once per loop, every
other op of the frame once per timestep. --time runs forward + backward with tiny tensors
(batch 2, 8 units) on the CPU device at 10 and 40 timesteps: the difference / 30 is the
executor's own cost per timestep on this host (no GPU launches in it).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
import types

CONTROL = {"Enter", "Exit", "Merge", "Switch", "NextIteration", "LoopCond", "Identity", "Const",
           "NoOp", "ControlTrigger"}
HOST_ONLY = CONTROL | {"StackV2", "StackPushV2", "StackPopV2", "TensorArrayReadV3",
                       "TensorArrayWriteV3", "TensorArrayGradV3", "Shape", "Reshape", "ExpandDims",
                       "Squeeze", "StridedSlice", "Pack", "ConcatOffset", "FloorMod", "Range",
                       "Less", "LogicalAnd", "GreaterEqual"}


def _shim_tf1():
    """tf.compat.v1 under the name `tensorflow`, with the tf.contrib names DLE's files touch."""
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    tf.disable_control_flow_v2()
    tf.contrib = types.SimpleNamespace(
        framework=types.SimpleNamespace(nest=tf.nest),
        learn=types.SimpleNamespace(ModeKeys=types.SimpleNamespace(TRAIN="train", EVAL="eval",
                                                                   INFER="infer")),
        rnn=types.SimpleNamespace(DropoutWrapper=tf.nn.rnn_cell.DropoutWrapper,
                                  ResidualWrapper=tf.nn.rnn_cell.ResidualWrapper, LSTMBlockCell=None),
        seq2seq=types.SimpleNamespace(Decoder=object, tile_batch=None))
    tf.nest.is_sequence = tf.nest.is_nested
    sys.modules["tensorflow"] = tf
    for name in ("tensorflow.contrib", "tensorflow.contrib.framework",
                 "tensorflow.contrib.framework.python", "tensorflow.contrib.cudnn_rnn",
                 "tensorflow.contrib.cudnn_rnn.python"):
        sys.modules[name] = types.ModuleType(name)
    fw = types.ModuleType("tensorflow.contrib.framework.python.framework")
    fw.tensor_util = types.SimpleNamespace(with_same_shape=lambda old, new: new)
    sys.modules[fw.__name__] = fw
    layers = types.ModuleType("tensorflow.contrib.cudnn_rnn.python.layers")
    layers.cudnn_rnn = None
    sys.modules[layers.__name__] = layers
    sys.modules["block_lstm"] = types.ModuleType("block_lstm")
    for key in ("use_xla", "use_defun", "xla_compile", "use_fp32_batch_matmul"):
        os.environ[key] = "false"       # nmt.py's defaults
    return tf


def build(dle_dir: str, batch: int, units: int, src_steps: int, tgt_steps: int):
    tf = _shim_tf1()
    sys.path.insert(0, dle_dir)
    import attention_wrapper  # noqa: E402  (DLE's files)
    import gnmt_model
    import model
    import model_helper
    mem = tf.placeholder(tf.float32, [batch, src_steps, units])
    src_len = tf.placeholder(tf.int32, [batch])
    tgt_len = tf.placeholder(tf.int32, [batch])
    emb = tf.placeholder(tf.float32, [tgt_steps, batch, units])
    mech = model.create_attention_mechanism(units, mem, src_len, dtype=tf.float32)
    cells = model_helper._cell_list(unit_type="lstm", num_units=units, num_layers=4,
                                    num_residual_layers=2, forget_bias=0.0, dropout=0.2,
                                    mode="train", dtype=tf.float32, single_cell_fn=None,
                                    residual_fn=gnmt_model.gnmt_residual_fn, use_block_lstm=False)
    att = attention_wrapper.AttentionWrapper(cells.pop(0), mech, attention_layer_size=None,
                                             output_attention=False, alignment_history=False,
                                             name="attention")
    cell = gnmt_model.GNMTAttentionMultiCell(att, cells)
    with tf.variable_scope("decoder") as scope:
        out, _ = tf.nn.dynamic_rnn(cell, emb, sequence_length=tgt_len,
                                   initial_state=cell.zero_state(batch, tf.float32),
                                   dtype=tf.float32, scope=scope, parallel_iterations=10,
                                   time_major=True)
    grads = tf.gradients(tf.reduce_sum(out), tf.trainable_variables() + [mem, emb])
    return tf, (mem, src_len, tgt_len, emb), [g for g in grads if g is not None]


def _frame(op) -> str:
    ctx = op._control_flow_context
    while ctx is not None and type(ctx).__name__ != "WhileContext":
        ctx = ctx.outer_context
    return ctx.name if ctx is not None else "(outside the loops)"


def count(tf) -> None:
    frames = collections.defaultdict(collections.Counter)
    for op in tf.get_default_graph().get_operations():
        frames[_frame(op)][op.type] += 1
    for name, ops in frames.items():
        if name.startswith("(outside"):
            continue
        per_step = {k: v for k, v in ops.items() if k not in ("Enter", "Exit")}
        kernels = sum(v for k, v in per_step.items() if k not in HOST_ONLY)
        print(f"{name}: {sum(per_step.values())} ops per timestep, {kernels} of them GPU kernels "
              f"(+ {ops['Enter']} Enter and {ops['Exit']} Exit once per loop)")
        print("   ", ", ".join(f"{k} {v}" for k, v in sorted(per_step.items(), key=lambda kv: -kv[1])))


def time_per_step(dle_dir: str) -> None:
    import numpy as np
    runs = {}
    for steps in (10, 40):
        tf, (mem, src_len, tgt_len, emb), grads = build(dle_dir, 2, 8, 10, steps)
        cfg = tf.ConfigProto(inter_op_parallelism_threads=2, intra_op_parallelism_threads=1)
        with tf.Session(config=cfg) as sess:
            sess.run(tf.global_variables_initializer())
            feed = {mem: np.random.rand(2, 10, 8).astype("float32"), src_len: np.full(2, 10, "int32"),
                    tgt_len: np.full(2, steps, "int32"),
                    emb: np.random.rand(steps, 2, 8).astype("float32")}
            train = tf.group(*grads)
            for _ in range(5):
                sess.run(train, feed)
            times = []
            for _ in range(30):
                t0 = time.perf_counter()
                sess.run(train, feed)
                times.append(time.perf_counter() - t0)
        runs[steps] = float(np.median(times))
        tf.reset_default_graph()
    print(f"executor time per timestep (forward + backward, CPU, tiny tensors): "
          f"{(runs[40] - runs[10]) / 30 * 1e3:.3f} ms (median of 30 steps at 10 and 40 timesteps)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dle_gnmt_dir", help="TensorFlow/Translation/GNMT of DLE at a6c678ef")
    ap.add_argument("--time", action="store_true", help="also time the loop on this CPU")
    args = ap.parse_args()
    tf, _, _ = build(args.dle_gnmt_dir, 128, 1024, 30, 30)
    count(tf)
    if args.time:
        tf.reset_default_graph()
        time_per_step(args.dle_gnmt_dir)


if __name__ == "__main__":
    main()
