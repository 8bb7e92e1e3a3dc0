"""distopt's figures (<!-- distopt:start/end -->): first on the 128-H100 matrices of the dense
models, where its compute reading is the lowest, and where it stands on 16 RTX 3090s, where
more of its communication is exposed behind one NIC per node."""

from __future__ import annotations

from .data import MODELS, cell
from .judging import need, resolved_word
from .words import listing, ordinal, pct


def distopt() -> str:
    R, H = "pcie-rtx3090", "dgx-h100"
    d = "distopt/fifo"
    h = {mo: cell(mo, H) for mo in ("transformer-wmt", "bert-base")}
    need(all(c.first == d for c in h.values()), "distopt/fifo is first on transformer-wmt and bert-base / H100s")
    need(all(min(c.rows, key=c.compute) == d for c in h.values()), "distopt's compute reading is its matrix's lowest there")
    r = {mo: cell(mo, R) for mo in MODELS}
    need(r["bert-base"].ranked[-1] == d, "distopt/fifo is last on bert-base / RTX 3090s")
    between = [mo for mo in MODELS if r[mo].step("fsdp/fifo") < r[mo].step(d) < r[mo].step("allreduce/fifo")]
    ahead = [mo for mo in MODELS if r[mo].step(d) < min(r[mo].step("fsdp/fifo"), r[mo].step("allreduce/fifo"))]
    h_txt = "; ".join(
        f"{mo}: compute reading {c.compute(d):.1f} ms (DDP {c.compute('allreduce/fifo'):.1f}), step {c.step(d):.2f} ms, "
        f"{pct(c.step('allreduce/fifo') / c.step(d) - 1)} ahead of DDP's {c.step('allreduce/fifo'):.2f} "
        f"({resolved_word(c.step('allreduce/fifo') / c.step(d) - 1)})" for mo, c in h.items())
    bb = r["bert-base"]
    return (
        "distopt in the matrices: on 128 H100s its compute reading (step minus exposed communication) is the lowest "
        f"of its matrix on transformer-wmt and bert-base, which puts it first on both ({h_txt}). On 16 RTX 3090s, "
        "behind one 100 Gb/s NIC per node, more of its communication is exposed (bert-base "
        f"{bb.exposed(d):.1f} ms against DDP's {bb.exposed('allreduce/fifo'):.1f}): last on bert-base "
        f"({bb.step(d):.2f} ms)"
        + (", between fsdp and DDP on " + listing([f"{mo} ({r[mo].step(d):.2f})" for mo in between]) if between else "")
        + (", ahead of both on " + listing([f"{mo} ({r[mo].step(d):.2f}, {ordinal(r[mo].rank(d))})" for mo in ahead])
           if ahead else "") + ".\n")
