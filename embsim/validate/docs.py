"""Regenerate docs/validation.md and its plot from the same code `embsim validate` runs:

    python -m embsim.validate.docs [--traces traces] [--out docs/validation.md]
"""

from __future__ import annotations

import argparse
import datetime as _dt
from pathlib import Path

from ..atomic import atomic_write_text
from ..errors import InputError
from .collectives import collective_errors
from .report import collective_summary, collective_table, plot_collectives, step_summary, step_table
from .steps import step_errors
from .training import original_section, training_section


# Curves a model constant is fitted on (each the ONE curve of its constant).
FIT_CURVES = {"azure-nd-a100-v4-allreduce": " (fit: SYNC_US)",
              "h100-slurm-1x8-sendrecv": " (fit: P2P_BATCH_CYCLES)",
              "nebius-h100-2node-allreduce": " (fit: PROXY_HANDOFF_US)"}

MODEL_NOTES = (
    "### How a collective's time is built, and what is fitted",
    "",
    "NCCL's algorithm and protocol choice is NCCL's own tuning model (the release's constant",
    "table, 2.18 to 2.30). The time of that choice comes from the kernel's pipeline",
    "(`embsim/collectives/pipeline.py`, `p2p.py`): NCCL's latency paid once as the pipeline",
    "fills; for Ring, loops x primitives x slices steps with the chunk NCCL really uses (the",
    "last loop's chunk shrinks; up to 2.19 LL/LL128 round it up to a grain: in AllReduce,",
    "whose chunks are laid out chunk-major, that empties the loop's last chunk slots and an",
    "empty LL/LL128 step polls no line, so the busiest rank moves 1.1-1.2x its share; in",
    "AllGather/ReduceScatter it idles the last channels); for NVLS,",
    "loops of channels x heads x chunk (16-128 KiB by size; up to 2.19 a partial loop runs",
    "on the channels its nHeads x chunk blocks reach) through three warp groups whose",
    "per-loop handshake (one slice per step: NCCL's whole per-hop Simple latency, 3.4 µs)",
    "is in series with the data, with NCCL's NVLS bandwidth holding at its full 128 KiB",
    "chunk -- so the 16-64 KiB chunks of smaller messages run slower, as the H100/H200",
    "curves show (~228 / 260 / 275 GB/s algbw on 32 / 64 / 128 KiB chunks) -- and one more",
    "stage to fill and drain; for Tree, chunk steps up and down; for p2p, NCCL's channels",
    "per peer, parts (4-32 channels by size; up to 2.19 at most 4 x p2pnChannels / nRanks",
    "on one node), 512 KiB NVLink / 128 KiB PCIe and network",
    "chunks and peers in flight; bandwidth at the channels/threads NCCL really launches.",
    "A p2p CTA's 20 warps are shared by the peer ops its channel holds (enqueue.cc",
    "finishWorkP2p up to 2.21, sendrecv.h from 2.22): an 8-GPU AlltoAll at >= 4 GiB gets one",
    "send and one recv warp per peer per channel, a SendRecv 8-10. The warps on the side that",
    "crosses the fabric (recv where NCCL reads, sm80 over NVLink; send elsewhere) bound the",
    "rate, each by Little's law: a copy warp keeps COLL_UNROLL x 16 B x 32 lanes in flight",
    "(device.h ncclCollUnroll, common_kernel.h: 4 KiB on sm80+, 2 KiB on sm70) per batch",
    "time. The batch time is the one fitted p2p constant, P2P_BATCH_CYCLES = 3530 SM cycles",
    "(1.78 µs at H100's 1980 MHz: 2.30 GB/s per warp; 1.64 on A100 at 1410 MHz), fitted on",
    "ONE curve, the 8-GPU H100 SendRecv (NCCL 2.29.2, `python -m",
    "embsim.collectives.fit_p2p`), which is therefore not held out. Counted in µs instead of",
    "cycles, the H100 value would predict the A100 SendRecv (P2P read mode) 14 % too fast; in",
    "cycles it is within 2 %: no read-versus-write penalty shows once the clock is counted.",
    "The 4-GPU H100 AlltoAll of NVIDIA/nccl#2169, the previous one-point fit, is a",
    "prediction now (1.2 %).",
    "The warps and the link form a closed queue (a batch waits for the link; the",
    "machine-repairman queue, solved exactly, no constant of its own), so near the point",
    "where the warps could just fill the link the rate runs below both (16 channels of 10",
    "warps on H100: ~0.94 of the link). Each part also pays one FIFO step more than its",
    "data (the step the other side copies",
    "out), the ~25-35 µs intercept of the H100 SendRecv and AlltoAll curves. p2p steps pay",
    "NCCL's handshake but not the ring's P2P-read round trip (send and recv warps are",
    "separate groups joined by an 8-step FIFO).",
    "",
    "Across nodes (`embsim/collectives/multinode.py`): NVLS needs CollNet (IB SHARP) there,",
    "so without it NCCL runs Ring, Tree or NVLSTree (tuning.cc disables NVLS on nNodes > 1",
    "when collnet is off; a topology opts in with `network.sharp`). NVLSTree moves data at the",
    "slowest of one node's NVLS AllReduce, the heads' NICs (the whole message once per",
    "direction on two nodes, half that rate on more) and NCCL's per-channel NVLSTree",
    "throughput (perChMaxNVLSTreeBws, 2.28+: 57.7 GB/s per channel on 2 Hopper nodes -- the",
    "kind of per-channel kernel limit the Tree kernel is held to), with 128 KiB chunks from",
    "2.21 (nvlsChunkSize; 64 KiB on 4+ nodes; 512 KiB before). Its pipeline fills at each",
    "stage's own rate, and a chunk crosses the network twice, up to its tree root and back",
    "down, each crossing a stage at the channel's share of the NICs. Tree's network hops are",
    "store-and-forward: the proxy posts a FIFO step only once the GPU finished it",
    "(net.cc), so each hop up and down adds one chunk's wire time and the proxy's hand-off",
    "(fitted, below), and each chunk step pays",
    "at least NCCL's own per-step net overhead (getNetOverhead: 1 µs, 2 on AMD, x3 for",
    "Simple; NCCL charges it to Ring's network steps). An inter-node hop costs",
    "NCCL's hwLat[NET] plus the topology file's NIC and leaf-switch latency; NCCL's choice",
    "sees the latency the net plugin reports instead (`nics.nccl_latency_us`: 0 for IB,",
    "75 µs from aws-ofi-nccl on p5, 35 on p5en/p6-b200), and the NICs as the plugin presents",
    "them (`nics.nccl_group`: 4 EFA NICs per device on p5). EFA's per-hop cost comes from AWS's",
    "own tuner model (20 µs on P5, 18 on P6-B200, aws-ofi-nccl src/tuner/nccl_ofi_model.cpp).",
    "",
    "Every Simple step (slice) pays the handshake NCCL prices as its per-hop latency",
    "(hwLat Ring/Simple split over a chunk's two slices: 1.7 µs over NVLink, 2.85 over PCIe):",
    "NCCL's number, not fitted; NCCL charges it once per hop, the kernel pays it every step.",
    "",
    "Fitted, and only here: one per-step cost per protocol, on ONE curve, the Azure ND A100 v4",
    "AllReduce (`python -m embsim.collectives.fit_sync`): LL 0.9 µs per step, and Simple 2.9 µs",
    "per step in P2P-read mode (each slice starts with a round trip over NVLink; NCCL reads",
    "from peers only between sm80 GPUs over NVLink, paths.cc). LL128 is not fitted. Nothing is",
    "fitted per system or per size; the H100, H200, GB200 and PCIe figures are predictions.",
    "Across nodes one more constant is fitted, on ONE curve, the Nebius 2x8 H100 InfiniBand",
    "AllReduce (`python -m embsim.collectives.fit_net`, its Tree/LL and Tree/LL128 points):",
    "the net proxy's hand-off, 5.5 µs per network crossing of a Tree chunk (up and down the",
    "inter-node tree: 2 per op on 2 nodes), on top of NCCL's hwLat[NET] and the fabric's hop.",
    "It stands for what NCCL's table prices as an empty step but the kernel waits for: the",
    "step's last line reaching the proxy's buffer over PCIe and its polling loop, the isend,",
    "and the receiver's completion reaching the GPU (net.cc send/recvProxyProgress); no",
    "source gives a figure. The B200 (Lambda) and EFA (AWS p5) curves are predictions.",
    "",
    "Gaps the model does not explain (reported, not absorbed into a constant):",
    "",
    "- A100 LL128 at 2-16 MiB (2.18.5): 12-31 % fast. Charged as rounded chunks on every",
    "  step, 2.18's LL128 rounding (19.2 KB grains) hid this at 2-4 MiB; but runRing lays",
    "  LL/LL128 chunks out chunk-major, so the rounding empties the last slots of the loop",
    "  (the busiest rank moves 1.17x its share at 2-4 MiB, 1.1-1.23x at 8-16 MiB, not",
    "  1.76x). With that, all four points are NCCL's LL128 latency (40.6 µs) plus the",
    "  busiest rank's bytes at 0.66 of NCCL's LL128 bandwidth (~145 GB/s busbw against",
    "  0.92 x 240; its per-channel cap, 20 GB/s x 12 graph channels, does not bind) to",
    "  within 3 %: one rate, not a per-step cost (15 steps at every size). LL128 pushes",
    "  its lines with remote stores while Simple reads from peers on sm80 (paths.cc enables",
    "  P2P read for Ampere/NVLink only); no source gives sm80's LL128 rate, so it is not in",
    "  the model. The same layout explains the LL point at 1 MiB (+18 % -> +6 %).",
    "- B200 NVLS saturation: the GB200 NVL72 rack (72 ranks) reaches 577-847 GB/s busbw at",
    "  0.5-8 GiB where NCCL 2.30's NVLS formula gives ~790-900; NCCL's own model is",
    "  optimistic there and the per-link / per-SM limits of Blackwell NVLS need their own source.",
    "  Its 1-8 GiB points fit ~485 µs + bytes / 440 GB/s algbw: no fill of NCCL's",
    "  32 channel x 32 head loops comes near 485 µs, and the slope is 5 % below NCCL's",
    "  NVLS bandwidth (465 algbw); both unexplained. A per-loop cost cannot be it: 4 and",
    "  8 GiB run the same number of loops (the chunk doubles to 128 KiB at 8 GiB) and their times",
    "  differ by 2x, which bounds it at ~4 µs per loop. The run is NCCL 2.25.1 (the image",
    "  of the PR's own Slurm job file), which gives sm100 32 NVLS CTAs (16 up to 2.24, 24 in",
    "  one NVLink domain from 2.27; nvls.cc): 1-2 points closer than 2.30's 24. 72 ranks",
    "  run 32 NVLS heads",
    "  (NCCL_MAX_NVLS_ARITY): every GPU still moves its whole input to the switch and",
    "  takes the whole result back, so the heads' extra 1/32 does not change the link load.",
    "- GB200 tray (4 ranks, 2.25.1) at 1-16 MiB: with 2.25's own Blackwell row NCCL picks",
    "  LL up to 4 MiB and LL128 at 8-16 MiB; measured LL runs ~14 µs + bytes at ~145 GB/s",
    "  algbw (1-4 MiB) and LL128 at ~0.75-0.8 of the 2.30 LL128 bandwidth the kernel is given",
    "  (the 8-16 MiB points are 9-15 % fast), and one-loop Simple (32 MiB-256 MiB) at ~614",
    "  GB/s busbw against 720 in NCCL's table and ~686 measured at 2-8 GiB. Below 1 MiB the",
    "  curve is flat at 17.1-17.8 µs, 1.5 µs under the simulated LL floor (+7-9 %): LL's per-step",
    "  cost is fitted on 8 A100s and predicts 4 B200s only roughly.",
    "- The stas00 8xA100 curve (Dec 2023, `-g 8`, NCCL version not given) is up to 2x slower",
    "  than the Azure A100 curve (2.18.5, also `-g 8`) at 0.1-4 MiB. Its times there follow",
    "  41.4 µs + 2.5 µs x the channels NCCL launches (Ring/LL trims to one channel per",
    "  32 KiB on 8 ranks: 2, 4, 8, 16, 24, 24, 24 at 64 KiB-4 MiB) to within 1 µs: a cost per",
    "  channel per op paid on the host by the one thread driving 8 GPUs, which the 2.18.5",
    "  curve does not show. Up to 2.12 NCCL wrote every channel's work into a host FIFO",
    "  from that thread (enqueue.cc getNextOp / setupLaunch; 2.13 replaced them with kernel",
    "  plans), so the shape is consistent with a release older than the 2.18-2.30 the model",
    "  accepts; it is reported, not fitted. From 8 MiB the curve has the Azure curve's",
    "  shape (LL128 at 16 MiB and Simple at 128-256 MiB short by similar amounts).",
    "- NVLS on H100/H200 at 8-32 MiB (32 KiB chunks): 5-10 % fast; the measured 32 KiB",
    "  chunk regime runs at 202-230 GB/s algbw where one handshake per loop gives ~233.",
    "- NCCL's Blackwell tables differ by release (tuning.cc) and the model has each one's,",
    "  every column: up to 2.24 sm100 reads Hopper's rows, 2.25-2.27 twice Hopper's, 2.28.9",
    "  its own Tree rows with Ring LL128 (73.4, 34.6, 73.4) and NVLSTree (0, 96, 43.8), 2.29",
    "  Ring LL128 40, 2.30 NVLSTree 80 on 4+ nodes (the latest patch of each release: 2.28.3",
    "  still had 14 µs and 43.1); hwLat[NET][NVLSTree] is 14 µs from 2.19 to 2.27, 20.9 from",
    "  2.28.9; NVLSTree's tree correction on sm100 x86 starts in 2.29; Tree's x0.92 and",
    "  perChMaxTreeBw cap hold every protocol (the line has no protocol test). With 2.26's",
    "  real rows NCCL picks NVLSTree from 2 MiB on the 2-node B200 curve (an earlier reading",
    "  that gave Tree/LL128 up to 512 MiB applied 2.29's NVLSTree correction to 2.26).",
    "- 8-GPU AlltoAll of the GTC25 slide (NCCL version not given): A100 210 GB/s (-10.8 %),",
    "  H100 320 (-11.8 %). The warps could outrun NVLink there, so the model runs at the link",
    "  rate; the slide's rates are 0.875 and 0.86 of it, where the held-out 2.29.2 H100 curve",
    "  reaches 0.95 at 16 GiB. No NCCL mechanism found (peers in flight, parts and warps all",
    "  leave the links the bottleneck) and no published NVSwitch many-to-many efficiency.",
    "- AlltoAll at 256-512 MiB on 8 H100s (-8.5 / -9.2 %): each peer's op sits on 4 channels",
    "  (28 remote parts of 10 send warps), whose warps could move ~640 GB/s, yet the measured",
    "  rate is 300-311 GB/s and rises only when the parts double (1 GiB); 280 warps are well",
    "  past the closed queue's knee (~160 on H100), so it does not explain this.",
    "- 8xA100 SendRecv at 128 MiB (li-plus, NCCL <= 2.19 by the page's date): a peer's op on",
    "  8 channels moves 110.8 GB/s, 1.73 GB/s per reading warp; the model's 1.64 gives 96",
    "  (+15 % slow); at 1 GiB (16 channels) it is within 2 %.",
    "- NCCL 2.18 NVLS below 2 MiB (H100): up to 2.19 the kernel lays a loop out in channel",
    "  blocks of nHeads x chunk, so a small message runs on one or a few channels (modelled);",
    "  the measured 64 KiB point already costs what 128 KiB does (42 µs) where the model",
    "  charges its 64 KiB on that channel half as long (-12 %): a lone channel's copy rate",
    "  is not its share of the link bandwidth, and no source gives it.",
    "- A100 Simple at 128-256 MiB (both A100 curves, -11 to -13 %): the measured 64 -> 128 MiB",
    "  step adds time at ~180 GB/s and the 128 -> 256 MiB step at ~280 GB/s, above the",
    "  links' 240; a one-loop ring has no mechanism for that dip, so it is left as measured.",
    "- P2P at 2.18-2.19 on one node: a peer's parts stop at 4 x p2pnChannels / nRanks",
    "  channels (16 on 8 ranks) -- modelled; the li-plus SendRecv's plateau from 256 MiB to",
    "  1 GiB is that cap (2.20+ would double to 32 channels at 512 MiB).",
    "- No host launch floor for `-g G`: the published curves time ops below G x 5 µs (XLA's",
    "  launch figure) -- 25.6 µs at 1 KiB on 8 H100s with `-g 8`, 15.4 µs on 4 B200s with",
    "  `-g 4` -- so a serial per-GPU launch cost is refuted by the data.",
    "",
    "Multi-node curves (added after the model was built as held-out data; the Nebius H100",
    "curve is the FIT curve of the proxy hand-off, the others are predictions; the NVLSTree",
    "fill's two network crossings were checked against them):",
    "",
    "- 2-node B200 AllReduce (GCP A4 over RoCE, Lambda over IB, NCCL 2.26.2): NVLSTree",
    "  within 8 % from 32 MiB (NIC-bound: 8 x 48 GB/s). Lambda's Tree/LL and the 256 KiB",
    "  Tree/LL128 point are within 7 % with the hand-off fitted on the H100 curve (they were",
    "  15-28 % fast). Unexplained: the measured time is flat at ~115-125 µs from 512 KiB to",
    "  4 MiB, where the simulated Tree/LL128 (512 KiB-1 MiB) and NVLSTree (2-4 MiB) take",
    "  71-94 µs (20-44 % fast); the step that doubles the time at 256 -> 512 KiB looks like a",
    "  ~110 µs fixed cost (a Tree/Simple or NVLSTree fill) that NCCL's 2.26 table, as read",
    "  here, does not pick (NVLSTree is 3 µs behind Tree/LL128 at 512 KiB in that table).",
    "- 2-node H100 AllReduce over IB (Nebius, the FIT curve): Tree/LL and Tree/LL128 at",
    "  64 KiB-2 MiB within 16.4 % (they were 13-31 % fast); below 64 KiB LL is now up to 30 %",
    "  slow (1-2 KiB measure 32 µs, the simulated 41: the one fitted value is too large there,",
    "  and right for Lambda's same sizes). NVLSTree within 3 % from 128 MiB (held by NCCL's",
    "  per-channel NVLSTree throughput, 246 GB/s; measured 251), 4-64 MiB 4-19 % slow; the",
    "  hand-off is not added to NVLSTree's crossings (it would make those 4-16 MiB points",
    "  slower still: 8.3 % / 26.4 % for the curve).",
    "- 2x AWS p5 over EFA: Tree/LL128 256 KiB-16 MiB 6-9 % fast, Tree/LL 32-128 KiB 14-26 %",
    "  fast. The LL time there grows ~1.8 µs per channel NCCL launches (64 -> 104 µs from 1 to",
    "  16 channels at 4 KiB each; ~0.35 µs per channel on IB): a per-channel cost of EFA's",
    "  send path that no source gives, so it is reported, not modelled.",
    "- 2x AWS p5 (EFA): aws-ofi-nccl presents each GPU's 4 EFA NICs to NCCL as one 400 Gb/s",
    "  device (`nics.nccl_group`), so NCCL builds NVLS heads on them and runs NVLSTree from",
    "  64 MiB: -7 to +6 % there. Not modelled: the p5 environment (NCCL_BUFFSIZE 8 MiB) and",
    "  AWS's region tuner (aws-ofi-nccl src/tuner/nccl_ofi_regions: on 16 ranks Tree/LL128 up",
    "  to 30 MiB, NVLSTree above). Releases v1.10-v1.14 apply it on 2 nodes, v1.15 and later",
    "  leave 2 nodes to NCCL (\"Default to nccl internal tuner on two nodes\"); the log does",
    "  not name its release. With the regions this curve would be 6.2 % / 17.3 %.",
    "- 2x GCP A3 Mega (GPUDirect-TCPXO): the AllReduce log passes on the TCPXO env profile's",
    "  NCCL_* settings (NCCL_ALGO=Ring,Tree NCCL_PROTO=Simple, as Google's scripts inline them),",
    "  and validate applies them: the ~123 µs floor is then NCCL's own Tree/Simple latency",
    "  (within 4 % at 2-8 KiB). Left unexplained: up to 16 MiB the measured time is ~130 µs +",
    "  size / 21 GB/s (about one NIC), from 32 MiB ~900 µs + size / 184 GB/s -- the profile's",
    "  tuner plugin (a3plus_tuner_config, not public) and TCPXO's per-step cost have no",
    "  published figures; simulated 1-64 MiB is 1.2-3x fast. Above 1 GiB it is 11-22 % slow:",
    "  the measured 337 GB/s busbw is above NCCL's Tree/Simple table (8 graph channels x",
    "  41.4 GB/s cap), though the kernel runs the 16 duplicated channels (connect.cc); held",
    "  only by the NICs (8 x 25 GB/s) it would be within 3 % at >= 1 GiB, but the same",
    "  argument doubles Tree/LL128 on the IB/EFA curves, which their data refutes, so it is",
    "  not applied. AllGather within 4 % at >= 512 MiB (two runs; they differ 1.4-2.4x at",
    "  8-128 MiB).",
    "- 4 x 8 H100 over 400 Gb/s RoCE (NVIDIA/nccl#1221, NCCL 2.19.3, the only point with more",
    "  than 2 NVSwitch nodes): ~320 GB/s busbw at 4-8 GiB, NVLS on or off alike; NCCL's table",
    "  picks Ring there too, simulated 345 GB/s (7 % fast).",
    "- 2 GB200 NVL72 racks (144 ranks): 10-20 % fast. The measured slope (~428 GB/s algBw)",
    "  is one rack's NVLS (~440), but the time has a ~1.45 ms intercept where the model's",
    "  fill (one rack's NVLS for the first 128 MiB loop, two crossings over the heads' NICs)",
    "  gives ~0.5 ms and one rack alone measures ~0.5 ms: unexplained.",
    "",
    "Held-out single-node curves (added after the model was built; the 8-GPU H100 SendRecv",
    "is the FIT curve of P2P_BATCH_CYCLES since its warp rate replaced the one-point fit, the",
    "others are predictions):",
    "",
    "- One H100 node, NCCL 2.29.2 (xxrjun/nccl-tests-cluster), 32 MiB - 16 GiB. SendRecv shows",
    "  NCCL's channel steps (4 channels to 64 MiB on 8 ranks, 8 at 128 MiB, 16 at 256 MiB, 32",
    "  from 512 MiB) as the model has them, at 10 warps x 2.30 GB/s per channel: 8 ranks",
    "  (fit) 2.3 % / 3.8 %, 4 ranks 2.5 % / 3.8 % (256 MiB 3.8 % fast; 3 % slow from 512 MiB,",
    "  every step's sync paid in series). AlltoAll 5.0 % / 9.2 % (8 ranks) and 3.0 % / 6.6 %",
    "  (4), worst at 256-512 MiB;",
    "  AllGather/ReduceScatter (Ring/Simple) within 4 % from 128 MiB, 13-26 % slow at 32 MiB.",
    "- OCI BM.GPU4.8 (8x A100 40GB, `-g 8`, NCCL version not printed): like the stas00",
    "  curve, LL/LL128 at 0.25-16 MiB 12-45 % fast; Simple >= 128 MiB within 3 %.",
    "- 8x V100 SXM2 hybrid cube-mesh (DGX-1 layout, 2019, NCCL 2.4-era before LL128 existed;",
    "  the model applies 2.30's choice): 32 KiB - 8 MiB 15-38 % fast, 16-128 MiB 8-14 % slow.",
)


def build(traces_dir: Path, out: Path) -> str:
    curves = collective_errors([], None)
    png = out.with_name("validation-nccl.png")
    plot_collectives(curves, png)
    parts = [
        "# Validation: simulated vs measured",
        "",
        f"Generated by `python -m embsim.validate.docs` on "
        f"{_dt.date.today().isoformat()}; the same numbers as `embsim validate --nccl-tests` "
        f"and `embsim validate --trace`. error = simulated/measured time − 1 "
        f"(= measured/simulated busbw − 1); the headlines are the mean and the max of |error| "
        f"(collectives: sizes ≥ 64 KiB), per curve and over all curves.",
        "",
        "## nccl-tests (published measurements, embsim/validation_data)",
        "",
        "`embsim validate --nccl-tests` (every packaged file, each on its own preset):",
        "",
        "| curve | op | NCCL | mean \\|error\\| | max \\|error\\| |",
        "|---|---|---|---:|---:|",
        *[f"| {c.name}{FIT_CURVES.get(c.name, '')} | {c.op} | {c.nccl} | {c.mean_error:.1%} | "
          f"{c.max_error:.1%} |" for c in curves],
        "",
        "(fit): the curve a constant is fitted on, so not a prediction (see below).",
        "",
        f"Overall: mean **{collective_summary(curves).mean:.1%}**, "
        f"max **{collective_summary(curves).max:.1%}**.",
        "",
        *MODEL_NOTES,
        "",
        f"![measured vs simulated busbw]({png.name})",
        "",
        collective_table(curves, markdown=True),
        "",
        "## Training steps of the shipped traces",
        "",
        "Each strategy the trace ran for real (`embsim calibrate`: 2 gloo ranks, one thread each)",
        "is simulated on the trace's own topology (`local-cpu`) with only measured inputs: the",
        "per-layer times measured inside real steps, the measured gloo collective curves, the",
        "model built as the real steps ran it (tied output projections untied), the measured",
        "interference of compute and communication sharing the cores (both slow down: compute",
        "to 1/(1+f) while a collective runs, collectives to 1/(1+g) while compute runs; f and g",
        "from one layer and one all_reduce timed alone and together), and the measured skew of",
        "the slowest rank (a straggler). Nothing is fitted to the step times below.",
        "",
    ]
    traces = sorted(traces_dir.glob("*.yaml"))
    if not traces:
        parts.append("No traces shipped yet.")
    for t in traces:
        try:
            rows = step_errors(t)
        except InputError as exc:
            parts += [f"### {t.name}", "", f"not validated: {exc}", ""]
            continue
        parts += [f"### {t.name}", "", step_table(rows, markdown=True), "",
                  f"|error|: mean **{step_summary(rows).mean:.1%}**, "
                  f"max **{step_summary(rows).max:.1%}** (target 10 %)", ""]
    parts += training_section()
    parts += original_section()
    text = "\n".join(parts) + "\n"
    atomic_write_text(out, text)
    return text


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--traces", default="traces")
    ap.add_argument("--out", default="docs/validation.md")
    args = ap.parse_args(argv)
    build(Path(args.traces), Path(args.out))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
