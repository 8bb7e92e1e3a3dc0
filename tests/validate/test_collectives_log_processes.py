"""validate --nccl-tests: a log's own `-g` (nGpus) against the topology it is run on."""

from embsim.cli import main

LOG = """# nThread 1 nGpus 2 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1000 on     host device  0 [0x01] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  1000 on     host device  1 [0x21] NVIDIA H100 80GB HBM3
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
  1073741824     268435456     float     sum      -1   9306.7  115.37  115.37      0   9291.5  115.56  115.56      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 115.4
"""


def test_a_logs_process_width_is_named_as_the_logs(tmp_path, capsys):
    # two GPUs in one process on a topology of one GPU a node: the error used to name
    # --ngpus, a flag validate does not have
    log = tmp_path / "pair_all_reduce.log"
    log.write_text(LOG)
    assert main(["validate", "--nccl-tests", str(log), "--topology", "dgx-h100:2x1"]) == 2
    err = capsys.readouterr().err
    assert "its process drove 2 GPUs" in err and str(log) in err and "--ngpus" not in err
