"""What a calibration trace measured, resolved once for the topology being simulated:
per-layer times, optimizer rates, collective curves, compute/communication interference
and the slowest rank's skew. The rest of the engine asks this object, never the trace.

Measured layer times transfer only to the chip they were measured on (else InputError);
collective curves and interference only to the topology the trace was captured on.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..topology import TopologySpec
from ..topology.device_names import device_chip
from ..trace.quality import quality_note
from ..yamlio import file_sha256

def check_trace_device(trace, topo) -> None:
    """Measured layer times transfer only to the chip they were measured on."""
    have, want = device_chip(trace.device), device_chip(topo.node.gpu.model)
    if have == want:
        return
    named = TopologySpec.parse(trace.topology).name if trace.topology else None
    if trace.host_topology is None and named == topo.preset:
        raise InputError(f"--trace {trace.source}: measured on {trace.device!r}, but its own topology "
                         f"{trace.topology} has {topo.node.gpu.model!r}: the trace contradicts itself "
                         f"(its device: and topology: keys disagree)")
    # what --topology takes: the trace itself when it embeds its machine, else the name it gives
    own = trace.source if trace.host_topology is not None else (trace.topology or "?")
    raise InputError(f"--trace {trace.source}: measured on {trace.device!r}, but topology "
                     f"{topo.preset} has {topo.node.gpu.model!r}: its layer times do not transfer "
                     f"(drop --topology to run the trace's own machine ({own}), or drop --trace for "
                     "a labelled kernel-model estimate)")


def check_model_file(trace) -> None:
    """The layers were timed from the model file as it was then (its sha256 in the trace):
    an edited file would run another model under "measured" times."""
    if not trace.model_sha256:
        return
    try:
        now = file_sha256(trace.model)
    except OSError as exc:
        raise InputError(f"--trace {trace.source}: the model file it was calibrated from, "
                         f"{trace.model}, cannot be read ({exc.strerror or exc})") from None
    if now != trace.model_sha256:
        raise InputError(f"--trace {trace.source}: the model file {trace.model} changed since the "
                         f"calibration (sha256 {now[:12]}..., calibrated {trace.model_sha256[:12]}...): "
                         f"its layer times are not this model's; restore the file or recalibrate")


@dataclass(frozen=True)
class MeasuredInputs:
    trace: object                   # embsim.trace.Trace
    on_own_topology: bool           # simulating the topology the trace was captured on

    @classmethod
    def resolve(cls, trace, topo) -> "MeasuredInputs | None":
        if trace is None:
            return None
        if trace.layers or trace.compute is not None:
            check_trace_device(trace, topo)
        check_model_file(trace)
        own = not trace.topology or TopologySpec.parse(trace.topology).name == topo.preset
        return cls(trace, own)

    # ------------------------------------------------------------------ compute
    @property
    def has_layer_times(self) -> bool:
        """False for a network-only trace (import-nccl-tests): collectives, no layer times."""
        return bool(self.trace.layers)

    @property
    def kernel_table(self):
        """calibrate's measured kernel table (GEMM grid, bandwidths, launch, LSTM step) of
        this device, or None."""
        return self.trace.compute

    @property
    def source(self) -> str:
        return self.trace.source or "trace"

    def covers(self, model) -> bool:
        """Use the trace's layer timings: it has them for this model, or it has no measured
        kernel table to fall back on (then a missing layer is an error in trace_times.trace_layer_times)."""
        if not self.has_layer_times:
            return False
        if self.kernel_table is None:
            return True
        return all(l.name in self.trace.layers for l in model.layers)

    @property
    def compute_source(self) -> str:
        t = self.trace
        note = quality_note(t)
        cap = (f" (tables over {t.table_rows_cap:,} rows measured at {t.table_rows_cap:,}: "
               "calibrate --max-rows)" if t.table_rows_cap else "")
        return (f"measured: {t.source or 'trace'} ({t.device}, {t.provenance.backend})" + cap
                + (f" ({note})" if note else ""))

    def optimizer_rates(self) -> dict[str, float] | None:
        """Seconds per updated element ("dense", "sparse-rows"), None when not measured."""
        if not self.has_layer_times or not self.trace.optimizer:
            return None
        return {o.name: o.median_s / o.elements for o in self.trace.optimizer if o.elements > 0}

    # ------------------------------------------------------------ communication
    def collective_curves(self) -> dict | None:
        """{(op, ranks): (sizes, seconds)}: they replace the model only on the trace's own
        topology."""
        if not self.trace.collectives or not self.on_own_topology:
            return None
        return {(c.op, c.ranks): (c.sizes, c.median_s) for c in self.trace.collectives if c.scope == "all"}

    def interference(self) -> tuple[float, float] | None:
        """(compute factor, comm factor) measured on this machine, else None."""
        i = self.trace.interference
        if i is None or not self.on_own_topology:
            return None
        return i.compute_factor, i.comm_factor

    def slowest_rank(self, world: int) -> str | None:
        """A measured step ends with its slowest rank while the layer timings are rank 0's:
        one rank computes slower by the measured rank skew (a --straggler value; None: not
        measured)."""
        k = self.trace.rank_skew
        if k is None or world < 2 or k.factor <= 1.0:
            return None
        return f"gpu:{world - 1}:{k.factor:.6g}"
