"""The shape of a YAML nccl-tests validation file (embsim/validation_data/*.yaml, or a
user's own for `embsim validate --nccl-tests FILE.yaml`), checked before anything is
simulated: a wrong type, a missing or unknown key, a size or bandwidth that is not a
positive finite number is one line naming the file, key and line.

Two kinds: a curve (`busbw:` size -> GB/s, one system) or a list of single points
(`points:`, each with its own system and `size`, or `size: large`).
"""

from __future__ import annotations

import re

from embsim.topology.spec import LIMITS
from embsim.errors import InputError
from embsim.yamlio import YamlDoc, check_mapping, check_type, get

from .busbw import OPS, canonical_op
from .constants import release_text
from .nccl_tests import MAX_BYTES, parse_size
from .release_dates import parse_date

MIN_SIZE = 64 << 10             # sizes below it are not compared (latency-bound, 2-decimal busbw)
_COMMON = ("system", "source", "nccl", "published", "how", "time_us", "note")
CURVE_REQUIRED = ("preset", "nodes", "gpus_per_node", "op", "busbw")
POINT_REQUIRED = ("preset", "nodes", "gpus_per_node", "op", "size")
MAX_GPUS_PER_NODE = LIMITS["count"]     # the topology loader's own bounds
MAX_NODES = LIMITS["nodes"]
# a logged NCCL release: 2.4, 2.19.3, or unknown, once release_text has taken off the forms a
# log or package carries (the banner's 2.21.5+cuda12.4, the tag v2.21.5-1)
_RELEASE = re.compile(r"^(unknown|\d+\.\d+(\.\d+)?)$")
_BAND = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:-\s*(\d+(?:\.\d+)?))?\s*$")


def check_curve_file(doc: YamlDoc) -> None:
    d = check_mapping(doc, (), doc.data, CURVE_REQUIRED, _COMMON)
    _system_keys(doc, (), d)
    # nccl-tests prints two decimals: small sizes' busbw reads 0.00
    d["busbw"] = _by_size(doc, ("busbw",), d["busbw"], zero_ok=True)
    if not any(size >= MIN_SIZE for size in d["busbw"]):
        raise doc.error(("busbw",), f"no size of at least {MIN_SIZE} bytes: the comparison starts there")
    if "time_us" in d:
        d["time_us"] = _by_size(doc, ("time_us",), d["time_us"], zero_ok=False)


def check_points_file(doc: YamlDoc) -> None:
    d = check_mapping(doc, (), doc.data, ("points",), ("note", "source"))
    points = check_type(doc, ("points",), d["points"], list)
    if not points:
        raise doc.error(("points",), "must list at least one point")
    for i, p in enumerate(points):
        where = ("points", i)
        check_mapping(doc, where, p, POINT_REQUIRED, _COMMON + ("busbw", "busbw_per_nic"))
        _system_keys(doc, where, p)
        if p["size"] != "large":
            p["size"] = _size(doc, where + ("size",), p["size"])
            get(doc, where, p, "size", int, lo=MIN_SIZE, hi=MAX_BYTES)
        if ("busbw" in p) == ("busbw_per_nic" in p):
            raise doc.error(where, "needs exactly one of busbw (GB/s) or busbw_per_nic (GB/s, or a range like 45-48)")
        if "busbw" in p:
            get(doc, where, p, "busbw", float, positive=True)
        else:
            band = _BAND.match(str(p["busbw_per_nic"]))
            if not band or float(band.group(1)) <= 0:
                raise doc.error(where + ("busbw_per_nic",), f"must be GB/s or a range like 45-48, "
                                                            f"got {p['busbw_per_nic']!r}")
        if "time_us" in p:
            get(doc, where, p, "time_us", float, positive=True)


def _system_keys(doc: YamlDoc, where: tuple, d: dict) -> None:
    """The keys a curve and a point share: the measured system and how it ran."""
    get(doc, where, d, "preset", str)
    if d["nodes"] != "many":
        get(doc, where, d, "nodes", int, lo=1, hi=MAX_NODES)
    get(doc, where, d, "gpus_per_node", int, lo=1, hi=MAX_GPUS_PER_NODE)
    if d["nodes"] == 1 and d["gpus_per_node"] == 1:
        # one rank's run is NCCL's copy on the GPU (collectives.one_rank), no collective to
        # validate; all_reduce's busbw there is 0, which the error would divide by
        raise doc.error(where + ("gpus_per_node",), "one GPU on one node: one rank, nothing crosses "
                        "a link between GPUs, so there is nothing to validate (embsim nccl-tests "
                        "--topology PRESET:1x1 prints the modelled copy time)")
    op = d["op"] = canonical_op(get(doc, where, d, "op", str))
    if op not in OPS:
        raise doc.error(where + ("op",), f"unknown op {op!r} (known: {', '.join(OPS)})")
    for key in ("system", "source", "how", "note"):
        get(doc, where, d, key, str, "")
    if "nccl" in d:
        # a number would lose digits: YAML reads 2.10 as 2.1
        nccl = get(doc, where, d, "nccl", str)
        if not _RELEASE.match(release_text(nccl)):
            raise doc.error(where + ("nccl",), f"must be a release like '2.19' or '2.21.5' (quoted; "
                                               f"2.21.5+cuda12.4 and v2.21.5-1 read as 2.21.5), "
                                               f"or 'unknown', got {nccl!r}")
    if "published" in d and parse_date(d["published"]) is None:
        raise doc.error(where + ("published",), f"must be a date like '2023-10-19', "
                                                f"got {d['published']!r}")


def _size(doc: YamlDoc, where: tuple, size):
    """A message size as bytes: an integer, or text as nccl-tests writes its -b/-e sizes
    ('1048576', '128K', '1M', '8G'; a JSON-converted file's keys are strings). Anything else
    is returned as it is, for the caller's own check to refuse by name."""
    if isinstance(size, str) and size.strip():
        if re.fullmatch(r"\s*\d+\.\d*\s*", size):       # bytes are whole
            raise doc.error(where, f"a message size must be a whole number of bytes, got {size!r}")
        try:
            return parse_size(size)
        except InputError:
            raise doc.error(where, f"a message size must be bytes or nccl-tests' K/M/G form "
                                   f"(128K, 1M), got {size!r}") from None
    return size


def _by_size(doc: YamlDoc, where: tuple, table, zero_ok: bool) -> dict:
    """size in bytes -> a finite number > 0 (>= 0 if zero_ok), at least one row; the table
    with its sizes as integers."""
    check_type(doc, where, table, dict)
    if not table:
        raise doc.error(where, "must map at least one message size (bytes) to a value")
    out = {}
    for key in table:
        size = _size(doc, where + (key,), key)
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_BYTES:
            raise doc.error(where + (key,), f"a message size must be a whole number of bytes "
                                            f"1..{MAX_BYTES}, got {key!r}")
        if size in out:
            raise doc.error(where + (key,), f"size {size} is given twice")
        if zero_ok:
            out[size] = get(doc, where, table, key, float, lo=0)
        else:
            out[size] = get(doc, where, table, key, float, positive=True)
    return out
