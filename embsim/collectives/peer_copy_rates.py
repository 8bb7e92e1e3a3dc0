"""Published SM-initiated peer-copy rates over NVLink, stores into a peer (write) against loads
from it (read): the measurements the A100 Ring/LL128 note (collective_notes.md, "Gaps the
model does not explain") tests the peer-write hypothesis against.

LL and LL128 push their lines into the receiver's FIFO with SM stores; Simple on sm80 over
NVLink loads from the sender (P2P read, paths.cc). If an A100's SM stores over NVLink ran well
below its loads, that would cap the two write protocols and not Simple. Nothing here feeds the
model: `python -m embsim.collectives.ll128_rate` sets each curve's implied LL/LL128 wire rate
against these figures, so the verdict in the notes is reproducible.

Each figure is what the tool printed, kept as printed (a matrix SUM, or one matrix entry),
with the pairs and directions it adds up, so the per-direction rate is computed, not retyped.
`both_ways` marks the bidirectional tests: both GPUs of a pair copy at once, which is the load a
ring puts on a GPU's NVLinks (it sends to one peer while another sends to it).

Missing, and what would settle the A100 case: one HGX A100 (NVSwitch) host publishing both
nvbandwidth's bidirectional write_sm and read_sm. The only A100 host with both (SuperBench)
does not name its GPUs (likely an HGX A100 40GB); the named NVSwitch hosts give one kind each.
"""

from __future__ import annotations

from dataclasses import dataclass

# repositories and files the figures come from (the commit each one was read at)
SUPERBENCH_LOG = ("github.com/microsoft/superbenchmark tests/data/gpu_copy_bw_performance.log "
                  "@700d6501 (gpu_copy.cu: 128-thread blocks, NCCL's ld/st.volatile.global.v2.u64; "
                  "a bidirectional figure is 2 x size / the slower stream's time); two GPUs, not "
                  "named: the DMA peer copy (275-279 GB/s) is NVLink3's, the 26 GB/s host link "
                  "PCIe4's and the 657-682 GB/s local copy (bytes once) 0.88 of an A100 40GB's "
                  "1555; the repository's other A100 fixtures (tests/data/nccl_*.log) are 8x "
                  "A100-SXM4-40GB and its 5.7-6.4 GB/s SM device-to-host copy is the quirk Azure "
                  "prints for ND A100 v4 (6.27): likely an HGX A100 40GB, NVSwitch not stated")
SUPERBENCH_TEST = ("github.com/microsoft/superbenchmark tests/benchmarks/micro_benchmarks/"
                   "test_gpu_copy_bw_performance.py @700d6501 (a second run, same tool and GPU class)")
AZURE_A100 = ("github.com/Azure/AI-benchmarking-guide Azure_Results/ND_A100_v4_results.md @3bb66cac "
              "(the host of the packaged Azure curve, NCCL 2.18.5): nvbandwidth "
              "device_to_device_bidirectional_memcpy_read_sm, 'Device to Device read' 423 "
              "(above NVLink3's 300 per direction, so both directions summed)")
YANBC = ("github.com/YanBC/nvmlc README.md @2494c46f: 8x A100-SXM4-80GB, "
         "p2pBandwidthLatencyTest --sm_copy (copyp2p, int4): the lowest and highest pair")
H800 = ("github.com/liguodongiot/llm-action ai-infra/网络/nvbandwidth.md @b676a90b: 8x H800, "
        "nvbandwidth v0.2 (a bidirectional SM figure is the two directions summed)")
OCI_GB200 = ("github.com/oracle-quickstart/oci-gpu-quickstarts nvidia/GB200/README-GB200.md "
             "@6a0abdc7: BM.GPU.GB200.4 (4 B200), nvbandwidth SUM lines (12 ordered pairs; "
             "the bidirectional write1/read1 SUMs are one direction each)")
AZURE_GB200 = ("github.com/Azure/AI-benchmarking-guide Azure_Results/ND_GB200_v6_results.md @2a370be6 "
               "(the host of the packaged GB200 tray curve): nvbandwidth bidirectional read_sm "
               "'Device to Device read' 1530, both directions summed (NVLink5: 900 per direction)")


@dataclass(frozen=True)
class PeerCopy:
    """One published SM peer-copy figure."""
    arch: int            # SM arch of the GPU (80 A100, 90 Hopper, 100 Blackwell)
    kind: str            # 'write' (SM stores into the peer) or 'read' (SM loads from it)
    both_ways: bool      # both GPUs of the pair copy at once
    printed: float       # GB/s as printed
    pairs: int           # (ordered) GPU pairs the printed figure adds up
    directions: int      # directions the printed figure adds up per pair (2: a summed bidir)
    source: str

    @property
    def per_direction(self) -> float:
        """GB/s one GPU moves in one direction."""
        return self.printed / (self.pairs * self.directions)


FIGURES = (
    PeerCopy(80, "write", False, 258.397, 1, 1, SUPERBENCH_LOG),
    PeerCopy(80, "read", False, 261.856, 1, 1, SUPERBENCH_LOG),
    PeerCopy(80, "write", True, 440.023, 1, 2, SUPERBENCH_LOG),
    PeerCopy(80, "read", True, 460.831, 1, 2, SUPERBENCH_LOG),
    PeerCopy(80, "write", False, 250.122, 1, 1, SUPERBENCH_TEST),
    PeerCopy(80, "read", False, 253.563, 1, 1, SUPERBENCH_TEST),
    PeerCopy(80, "write", True, 427.446, 1, 2, SUPERBENCH_TEST),
    PeerCopy(80, "read", True, 446.835, 1, 2, SUPERBENCH_TEST),
    PeerCopy(80, "read", True, 423.0, 1, 2, AZURE_A100),
    PeerCopy(80, "write", False, 200.53, 1, 1, YANBC),
    PeerCopy(80, "write", False, 231.41, 1, 1, YANBC),
    PeerCopy(80, "write", True, 306.01, 1, 2, YANBC),
    PeerCopy(80, "write", True, 388.10, 1, 2, YANBC),
    PeerCopy(90, "write", False, 9271.04, 56, 1, H800),
    PeerCopy(90, "read", False, 9385.10, 56, 1, H800),
    PeerCopy(90, "write", True, 18341.61, 56, 2, H800),
    PeerCopy(90, "read", True, 16898.01, 56, 2, H800),
    PeerCopy(100, "write", False, 8606.87, 12, 1, OCI_GB200),
    PeerCopy(100, "read", False, 9428.13, 12, 1, OCI_GB200),
    PeerCopy(100, "write", True, 8475.78, 12, 1, OCI_GB200),
    PeerCopy(100, "read", True, 8081.07, 12, 1, OCI_GB200),
    PeerCopy(100, "read", True, 1530.0, 1, 2, AZURE_GB200),
)


def figures(arch: int, kind: str | None = None, both_ways: bool | None = None) -> list[PeerCopy]:
    """The published figures of one SM arch, optionally of one kind and test pattern."""
    return [f for f in FIGURES if f.arch == arch and (kind is None or f.kind == kind)
            and (both_ways is None or f.both_ways == both_ways)]


def write_over_read(arch: int, both_ways: bool) -> list[float]:
    """Per-direction write / read of each source that published both for one pattern."""
    out = []
    for source in dict.fromkeys(f.source for f in figures(arch, both_ways=both_ways)):
        w = [f.per_direction for f in figures(arch, "write", both_ways) if f.source == source]
        r = [f.per_direction for f in figures(arch, "read", both_ways) if f.source == source]
        if w and r:
            out.append(max(w) / max(r))
    return out
