"""Transcribe llm-foundry's benchmark README tables into validation-file runs (how
embsim/validation_data/training/heldout/llm-foundry-mpt-ac.yaml's runs were written).

    git -C LLM_FOUNDRY show b2a43a1477a45f40f4086a1c72f851b0ab42d0ac:scripts/train/benchmarking/README.md > b2a.md
    git -C LLM_FOUNDRY show 5e85bd62d4ec9e13353ca95877477602ab538e5b:scripts/train/benchmarking/README.md > 5e8.md
    python benchmarks/llm_foundry_rows.py b2a.md 5e8.md True emit      # the checkpointed rows
    python benchmarks/llm_foundry_rows.py b2a.md 5e8.md False check    # the same mapping vs llm-foundry-mpt.yaml

Rows of the H100 80GB BF16, A100 80GB and A100 40GB tables (b2a43a1) and the large-scale
H100 table (5e85bd6) whose Activation Checkpointing cell is the third argument; the FP8
table is never read. `check` compares every key but source of llm-foundry-mpt.yaml's runs.
"""
import sys
from pathlib import Path

import yaml

B2A = open(sys.argv[1]).read()
E58 = open(sys.argv[2]).read()
TABLES = [  # (readme text, heading, gpu key, preset, anchor)
    (B2A, 'H100 80GB BF16', 'h100', 'dgx-h100', 'b2a'),
    (B2A, 'A100 80GB with 1600 Gbps node-node interconnect (RoCE)', 'a100-80gb', 'dgx-a100', 'b2a'),
    (B2A, 'A100 40GB with 1600 Gbps node-node interconnect (RoCE)', 'a100-40gb', 'dgx-a100-40gb', 'b2a'),
    (E58, 'H100 80GB BF16 (Large Scale, >= 128 GPUs)', 'h100', 'dgx-h100', '5e8'),
]
def table(text, heading):
    lines = text.splitlines()
    i = lines.index('## ' + heading)
    rows, hdr = [], None
    for l in lines[i+1:]:
        if l.startswith('## '): break
        if not l.startswith('|'): continue
        cells = [c.strip() for c in l.strip().strip('|').split('|')]
        if hdr is None: hdr = cells; continue
        if cells[0].startswith('---'): continue
        rows.append(dict(zip(hdr, cells)))
    return rows
ac = sys.argv[3]
# 5e85bd6 sweep.py: --attn_impl flash for 1b, 3b, 7b, 70b; triton for 13b, 30b
SWEEP_PY_FLASH = ('1b', '3b', '7b', '70b')
out = []
for text, heading, gkey, preset, anchor in TABLES:
    rows = [r for r in table(text, heading) if r['Activation Checkpointing'] == ac]
    for r in rows:
        r['_t'] = (heading, gkey, preset, anchor)
    out += rows
# ids
def rid(r):
    return f"{r['_t'][1]}-{r['Model']}-s{r['SeqLen (T)']}-mb{r['MicroBatchSize']}x{r['GradAccum']}-{r['# GPUs']}gpu"
ids = [rid(r) for r in out]
assert len(set(ids)) == len(ids), [i for i in ids if ids.count(i) > 1]
# scaling base: same table, model, seq, micro batch -> the fewest GPUs
for r in out:
    grp = [q for q in out if q['_t'][0] == r['_t'][0] and q['_t'][3] == r['_t'][3] and q['Model'] == r['Model']
           and q['SeqLen (T)'] == r['SeqLen (T)'] and q['MicroBatchSize'] == r['MicroBatchSize']]
    base = min(grp, key=lambda q: int(q['# GPUs']))
    r['_base'] = rid(base) if base is not r and int(base['# GPUs']) < int(r['# GPUs']) else None
if sys.argv[4] == 'check':
    ex = yaml.safe_load(open(Path(__file__).resolve().parents[1] / 'embsim/validation_data/training/heldout/llm-foundry-mpt.yaml'))
    got = {rid(r): r['_base'] for r in out}
    bad = 0
    for e in ex['runs']:
        if e['id'] not in got: print('missing', e['id']); bad += 1; continue
        if got[e['id']] != e.get('scaling_base'): print('base', e['id'], got[e['id']], e.get('scaling_base')); bad += 1
    print('checked', len(ex['runs']), 'bad', bad); sys.exit()
for r in out:
    heading, gkey, preset, anchor = r['_t']
    gpus = int(r['# GPUs']); assert gpus % 8 == 0
    nodes = gpus // 8
    mb, acc, seq = int(r['MicroBatchSize']), int(r['GradAccum']), int(r['SeqLen (T)'])
    assert int(r['GlobalBatchSize']) == mb * acc * gpus, rid(r)
    model = 'mpt-' + r['Model']
    prec, mp, shard = r['Precision'], r['MP Mode'], r['Sharding Strategy']
    emb = [f"model: {model}"]
    if gkey == 'h100' or gkey == 'a100-80gb':
        emb.append("nccl_version: '2.18'")
    emb += [f"topology: '{preset}:{nodes}x8'", f"batch: {mb}", f"seq: {seq}"]
    if acc > 1: emb.append(f"accumulate: {acc}")
    layers = {}
    if seq != 2048: layers['position_embedding'] = f"{{rows: {seq}}}"
    if anchor == '5e8' and r['Model'] in SWEEP_PY_FLASH: layers['decoder'] = "{flash_attention: fa2}"
    if layers: emb.append("layers: {" + ", ".join(f"{k}: {v}" for k, v in layers.items()) + "}")
    if mp == 'PURE': emb.append("optimizer: {fp32_gradients: false}")
    else: assert mp == 'DEFAULT'
    if shard != 'FULL_SHARD': emb.append(f"options: {{sharding: {shard}}}")
    head = (f"  - {{id: {rid(r)}, source: *{anchor}, table: '{heading}', gpus: {gpus}, nodes: {nodes},\n"
            f"     precision: {prec}, mixed_precision: {mp}, sharding: {shard}, activation_checkpointing: {str(ac).lower()},\n"
            f"     micro_batch: {mb}, accumulation_steps: {acc}, global_batch: {r['GlobalBatchSize']}, seq: {seq}, num_params: {int(r['NumParams'])},\n"
            f"     mfu_percent: {r['MFU']}, hfu_percent: {r['HFU']}, metric: 'Throughput (T/s)', value: {int(r['Throughput (T/s)'])}, unit: tokens/s"
            + (f", scaling_base: {r['_base']}" if r['_base'] else "") + ",\n"
            f"     embsim: {{{', '.join(emb)}}}}}")
    print(head)
print(len(out), file=sys.stderr)
