"""NCCL settings that change how a measured run moved its data in ways the model has no
counterpart for: a different transport (TCP sockets between nodes, host memory instead of
GPU peer-to-peer inside one) or a hand-set channel count.

A measurement taken with a transport switch is not of the system the topology describes:
scoring it would blame (or credit) the model for a path it never simulated. Red Hat's L40S
log (`-x NCCL_IB_DISABLE=1`, TCP over a 1500-MTU netdev, 8 GB/s) read as RDMA over the file's
400 GbE NICs came out 65 % off, and nothing said why. So such a run is refused, naming the
setting. A hand-set channel count or topology file is kept, with a note: NCCL's default
stands in (its effect is usually small, and published recipes set them).

Each switch matters only where the path it replaces exists: NCCL_IB_DISABLE between nodes,
NCCL_P2P_DISABLE where the GPUs of a node talk peer-to-peer, NCCL_SHM_DISABLE where they
stage through host memory, as NCCL's defaults decide for the run's release
(shape.node_transports, the same reading the kernels' rate and the host-staged note use).
"""

from __future__ import annotations

from dataclasses import dataclass

from embsim.errors import InputError

from .nccl_env import settings
from .shape import node_transports


@dataclass(frozen=True)
class _Switch:
    name: str
    values: tuple[str, ...]        # the settings (case-insensitive) that switch the path
    what: str                      # what the run then used
    where: str                     # "nodes" | "p2p" | "shm": when the replaced path is in use


_SWITCHES = (
    _Switch("NCCL_IB_DISABLE", ("1",), "NCCL's TCP socket transport between nodes, not RDMA", "nodes"),
    _Switch("NCCL_NET", ("socket",), "NCCL's TCP socket transport between nodes, not RDMA", "nodes"),
    _Switch("NCCL_P2P_DISABLE", ("1",),
            "host memory (SHM) between a node's GPUs, not GPU peer-to-peer", "p2p"),
    # P2P_LEVEL LOC (0): peer-to-peer never used (paths.cc ncclTopoCheckP2p)
    _Switch("NCCL_P2P_LEVEL", ("loc", "0"),
            "host memory (SHM) between a node's GPUs, not GPU peer-to-peer", "p2p"),
    _Switch("NCCL_SHM_DISABLE", ("1",),
            "the network between a node's GPUs, not host memory (SHM)", "shm"),
)

# Kept with a note: NCCL's default stands in for what the run set
_NOTED = ("NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS",
          "NCCL_NTHREADS", "NCCL_GRAPH_FILE")



def _in_use(where: str, topology, version) -> bool:
    """Whether the path a switch replaces carries the run: between nodes, or a node's
    ring's GPU-to-GPU ("p2p") or host-staged ("shm") hops under NCCL's defaults
    (shape.node_transports: the driver's P2P and NCCL's P2P level)."""
    if where == "nodes":
        return topology.n_nodes > 1
    return where in node_transports(topology, version)


def unmodelled_transport(text: str | None, topology, version=None) -> list[str]:
    """The transport switches the run set that take it off the modelled path on
    `topology` under NCCL `version`, each as "NAME=VALUE (what the run used)"."""
    found = settings(text)
    out = []
    for s in _SWITCHES:
        value = found.get(s.name)
        if value is not None and value.lower() in s.values and _in_use(s.where, topology, version):
            out.append(f"{s.name}={value} ({s.what})")
    return out


class UnmodelledTransport(InputError):
    """A measured run that moved its data on a path embsim does not model."""


def refuse_unmodelled(text: str | None, topology, where: str, version=None) -> None:
    """UnmodelledTransport naming the setting when the run moved its data on a path embsim
    does not model (unmodelled_transport)."""
    found = unmodelled_transport(text, topology, version)
    if found:
        raise UnmodelledTransport(f"{where}: the run set {'; '.join(found)}: a transport embsim does not "
                         f"model, so its times are not the described system's; score a run "
                         f"without it")


def _named(text: str | None, names, keep=lambda name, value: True) -> str:
    """'NAME=V NAME=V' for those of `names` the run's text sets (and `keep` keeps)."""
    found = settings(text)
    return " ".join(f"{n}={found[n]}" for n in names if n in found and keep(n, found[n]))


def noted_settings(text: str | None) -> str:
    """A line for the output naming the channel-count settings a run made that the model
    leaves at NCCL's defaults; "" when none."""
    said = _named(text, _NOTED)
    return f"{said} set by the run: NCCL's default stands in" if said else ""


def held_settings(text: str | None) -> str:
    """A line naming the NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE=0 a run's log shows it ran
    with (its command line, NCCL's INFO lines, a net plugin's), which the model applies;
    "" when none."""
    said = _named(text, ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE"),
                  lambda name, value: name != "NCCL_NVLS_ENABLE" or value == "0")
    return f"{said} set for the run (its log): the model is held to it" if said else ""
