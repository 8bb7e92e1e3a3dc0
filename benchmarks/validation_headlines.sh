#!/usr/bin/env bash
# Every validation headline in one run (mean and max |simulated/measured - 1| per set), as the
# README and docs/validation.md quote them. Run from the repository root after `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
E=.venv/bin/embsim
D=embsim/validation_data
echo "== collectives, every packaged nccl-tests curve and point";  $E validate --nccl-tests | tail -1
echo "== collectives, the curves the model was built against (no held-out additions of 2026-12-01 evening or 2026-12-02)"
$E validate --nccl-tests $(ls $D/*.yaml | grep -Ev 'p2poff|10x|20rack|128gpu|/ext-|/ext2-|/ext3-|/ext4-|/ext5-|/ext6-|/ext7-|/ext8-|/ext9-') | tail -1
echo "== collectives, held out: P2P-off PCIe (AutoDL 2x RTX 2080 Ti)";  $E validate --nccl-tests $(ls $D/*p2poff*.yaml | grep -v /ext9-) | tail -1
echo "== collectives, held out: 10-node H100, GB200 multi-rack";  $E validate --nccl-tests $(ls $D/*{10x,20rack,128gpu}*.yaml | grep -v /ext2-) | tail -1
echo "== collectives, held out: systems found 2026-12-02 (AWS p5 2-32 nodes, Alps GH200, H800/H200/H100 points)"
$E validate --nccl-tests $D/ext-*.yaml | tail -1
echo "== collectives, held out: second round found 2026-12-02 (A100 40GB -g 8, H100 2-8 nodes over NDR IB, H100 -g 8, ReduceScatter Ring, XE9680 points, h100-slurm ops not packaged before)"
$E validate --nccl-tests $D/ext2-*.yaml | tail -1
echo "== collectives, held out: points found 2026-12-02 (fourth session) to test the one-node NVLS traffic model (8x B200)"
$E validate --nccl-tests $D/ext3-*.yaml | tail -1
echo "== collectives, held out: systems found 2026-12-02 (fifth session: AWS p5 2x8 on 2.20.3/2.22.3, H100 -g 8 Ring and NVLS, 8x B200 points, B200 SendRecv over IB on 2/4 nodes)"
$E validate --nccl-tests $D/ext4-*.yaml | tail -1
echo "== collectives, held out: RTX 4090 with P2P off found 2026-12-02 (fifth session: 2 and 4 GPUs of one box, preset pcie-rtx4090)"
$E validate --nccl-tests $D/ext5-rtx4090-*.yaml | tail -1
echo "== collectives, held out: HGX H20 (fifth session: 2x8 H20 AllReduce and its peak, NVIDIA/nccl#1244)"
$E validate --nccl-tests $D/ext5-h20-*.yaml | tail -1
echo "== collectives, held out: NVLink 5 / Blackwell (fifth session: Google A4X GB200 NVL72 one-domain points, GKE A4 8x B200 curves, CoreWeave 2x8 B200 point)"
$E validate --nccl-tests $D/ext6-*.yaml | tail -1
echo "== collectives, held out: AWS p4d (2026-12-03: 2x8 AllReduce on NCCL 2.23.4 / 2.8.3 / 2.9.9 over EFA v1, 1-4 node points, preset aws-p4d)"
$E validate --nccl-tests $D/ext7-*.yaml | tail -1
echo "== collectives, held out: eighth session (2026-12-03: AWS g5.48xlarge 4x A10G AllReduce on NCCL 2.18.5, preset aws-g5; 2x8 H200 on OCI over RoCE, NCCL 2.27.5)"
$E validate --nccl-tests $D/ext8-*.yaml | tail -1
echo "== collectives, held out: probe J (2026-12-05: 8x RTX 4090 on AMD EPYC root ports P2P off / on, preset pcie-rtx4090-epyc; 2x H100 PCIe over an NVLink bridge; 8x H20 -g 8; OCI V100 / A100 40GB points)"
$E validate --nccl-tests $D/ext9-*.yaml | tail -1
echo "== training, packaged copies (what the real runs execute)";  $E validate --training | grep '^mean'
echo "== training, the issue's original files as given";  $E validate --training $D/training/original/*.yaml | grep '^mean'
echo "== training, held-out recommenders (DLE NCF; DLRM small 1 GPU and large 8 GPUs)";  $E validate --training $D/training/heldout/dle-pytorch-ncf.yaml $D/training/heldout/dle-pytorch-dlrm.yaml | grep '^mean'
echo "== training, held-out DLE PyTorch Transformer-XL (DGX A100 40GB, DGX-1 V100, 1-8 GPUs; zoo transformer-xl-base/-large)";  $E validate --training $D/training/heldout/dle-pytorch-transformer-xl.yaml | grep '^mean'
echo "== training, held-out TensorFlow2 DLRM (DLE doc/DLRM.md, A100/V100, 1 and 8 GPUs, T15/T3/T0 tables)";  $E validate --training $D/training/heldout/dle-tf2-dlrm.yaml | grep '^mean'
echo "== training, held-out TorchRec DLRM (README 'Preliminary Training Results', AWS p4d, 8/16/80 A100 40GB)";  $E validate --training $D/training/heldout/torchrec-dlrm-p4d.yaml | grep '^mean'
echo "== training, held-out Merlin distributed-embeddings synthetic models (README 'Preliminary Benchmark Results', DGX A100, 1-128 GPUs, 55-1022 tables)";  $E validate --training $D/training/heldout/merlin-de-synthetic.yaml | grep '^mean'
echo "== training, held-out HugeCTR Sparse Operation Kit DLRM (SOK DLRM_Benchmark README, 8 A100 / 8 V100, TF2 + Horovod, one fused key % 8 table)";  $E validate --training $D/training/heldout/sok-dlrm-criteo.yaml | grep '^mean'
echo "== training, held-out TensorFlow2 BERT-large pre-training (DLE TF2 README, DGX A100 80GB, 1 GPU - 32 nodes)";  $E validate --training $D/training/heldout/dle-tensorflow2-bert.yaml | grep '^mean'
echo "== training, held-out TensorFlow2 BERT-large SQuAD v1.1 (DLE TF2 README, DGX-1 V100 16/32GB, DGX A100 80GB)";  $E validate --training $D/training/heldout/dle-tensorflow2-bert-squad.yaml | grep '^mean'
echo "== training, held-out PaddlePaddle BERT-large pre-training (DLE Paddle README, DGX A100 80GB, 1 GPU - 32 nodes)";  $E validate --training $D/training/heldout/dle-paddle-bert.yaml | grep '^mean'
echo "== training, held-out PaddlePaddle BERT-large SQuAD v1.1 (DLE Paddle README, DGX A100 80GB)";  $E validate --training $D/training/heldout/dle-paddle-bert-squad.yaml | grep '^mean'
echo "== training, held-out TensorFlow1 BERT-large pre-training (DLE TF1 README, DGX-1 V100 16/32GB, DGX A100 40GB, 1 GPU - 32 nodes)";  $E validate --training $D/training/heldout/dle-tf1-bert.yaml | grep '^mean'
echo "== training, held-out TensorFlow1 BERT-large SQuAD v1.1 (DLE TF1 README, DGX-1 V100 16/32GB, DGX A100 40GB)";  $E validate --training $D/training/heldout/dle-tf1-bert-squad.yaml | grep '^mean'
echo "== training, held-out TensorFlow1 GNMT v2 (DLE TF1 README, DGX A100 40GB / DGX-1 V100 16GB, 1 and 8 GPUs)";  $E validate --training $D/training/heldout/dle-tf1-gnmt.yaml | grep '^mean'
echo "== training, held-out LLM (Megatron-Bridge Llama3 8B, more releases and GB200)";  $E validate --training $D/training/heldout/megatron-bridge-llama3-8b-*.yaml | grep '^mean'
echo "== training, held-out LLM (NeMo user-guide performance pages: Llama3 8B, 25.02 B200, 25.04/25.07 GB200)";  $E validate --training $D/training/heldout/nemo-docs-llama3-8b.yaml | grep '^mean'
echo "== training, held-out TensorFlow2 Wide & Deep (DLE TF2 WideAndDeep README, DGX A100 80GB / DGX-1 V100 32GB, 1 and 8 GPUs, no-XLA cells)";  $E validate --training $D/training/heldout/dle-wide-deep-tf2.yaml | grep '^mean'
echo "== training, held-out MosaicML MPT (llm-foundry benchmark tables, A100/H100, 8-512 GPUs)"; $E validate --training $D/training/heldout/llm-foundry-mpt.yaml | grep '^mean'
echo "== training, held-out MosaicML MPT with activation checkpointing (llm-foundry tables, 760M-70B, seq 512-65536, A100/H100, 8-512 GPUs, recompute full)"; $E validate --training $D/training/heldout/llm-foundry-mpt-ac.yaml | grep '^mean'
echo "== training, held-out torchtitan Llama 3 8B (torchtitan/docs/performance.md, FSDP2, 64 A100 80GB, selective layer AC = recompute every:2)"; $E validate --training $D/training/heldout/torchtitan-llama3.yaml | grep '^mean'
echo "== training, held-out tensor-parallel NeMo rows (performance_summary.md: GPT3-20B, Nemotron-8B on 64 H100, LLAMA2-7B 16K on 16; TP 2, sequence parallel)"; $E validate --training $D/training/heldout/nemo-24.07-tp.yaml | grep '^mean'
echo "== training, held-out Lambda Labs PyTorch benchmarks (lambdal/deeplearning-benchmark: BERT SQuAD, GNMT, NCF on V100, RTX 3090/4090, A100, H100; 1-8 GPUs)"; $E validate --training $D/training/heldout/lambda-pytorch.yaml | grep '^mean'
echo "== training, held-out pipeline-parallel NeMo row (performance_summary.md: LLAMA2-7B 8K on 8 H100; PP 2, 1F1B, 128 micro-batches)"; $E validate --training $D/training/heldout/nemo-pp.yaml | grep '^mean'
echo "== training, held-out context-parallel NeMo rows (performance_summary.md: LLAMA3-8B 8K CP 2 on 8 H100; LLAMA2-7B 32K-1024K, TP 2-8, CP 2-32 on 32-1024; TE p2p ring)"; $E validate --training $D/training/heldout/nemo-cp.yaml | grep '^mean'
echo "== training, held-out interleaved-pipeline NeMo rows (performance_summary.md: GPT3-175B, LLAMA2-13B/70B, Nemotron-22B/340B; PP 4-8, VP 6-20; ~15 min)"; $E validate --training $D/training/heldout/nemo-vp.yaml | grep '^mean'
echo "== training, held-out Megatron-Bridge Llama 3 70B pipeline rows (DGX-H100, TP 4 PP 4-8 VP 5; ~10 min)"; $E validate --training $D/training/heldout/megatron-bridge-pp.yaml | grep '^mean'
echo "== rankings (published strategy comparisons: Parallax LM-1B, OpenEmbedding Criteo)"; .venv/bin/python benchmarks/ranking_check.py | grep headline
for trace in traces/cpu-gloo-*.yaml; do
  echo "== CPU trace $trace";  $E validate --trace "$trace" | tail -1
done
