"""One line of an nccl-tests log: the launcher's or collector's prefix taken off, and what
a line says besides the table (the header's parameters, library versions, settings that a
net plugin made, CUDA-graph launches, the table layout's age)."""

from __future__ import annotations

import re

# Prefixes launchers and log collectors put before every line, taken off repeatedly (they
# stack: a timestamp, then SkyPilot's, then mpirun's). Each needs its own punctuation, so a
# row ("  1024  256 float ...") or an NCCL INFO line ("host:12:34 [0] NCCL INFO") keeps its text.
_PREFIXES = (
    r"\[\d+,\d+\]<std(?:out|err)>:",                     # mpirun --tag-output "[1,0]<stdout>:"
    r"\d+:\s",                                           # srun -l "0: "
    r"[A-Za-z][\w.-]{0,63}:\s+(?=[#\d])",                # pdsh "node01: " (before a '#' or a row)
    r"\([^()\n]{0,200}?\bpid=\d+[^()\n]{0,200}\)\s*",    # Ray / SkyPilot "(head, rank=0, pid=3808) "
    r"\[pod/[^\]\s]{1,250}\]\s",                          # kubectl logs --prefix "[pod/NAME/CONTAINER] "
    # ISO 8601 (docker/kubectl --timestamps, CI runners, `ts -s`): "2024-05-01T10:00:00.123Z "
    r"\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?\]?\s",
    r"\[?\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?\]?\s",         # a time alone: "10:00:00 ", "[10:00:00.5] "
    r"[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}\s",         # `ts` / syslog "May 01 10:00:00 "
)
_LAUNCHER_PREFIX = re.compile(r"^\s*(?:" + "|".join(_PREFIXES) + ")")

_NCCL_ASSIGNMENT = re.compile(r"\bNCCL_[A-Z0-9_]+=\S")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_LIBRARY_CODE = re.compile(r"nccl-library=(\d{1,9})\b")   # NCCL_VERSION codes (22602)
_TESTS_VERSION = re.compile(r"nccl-tests version (\S+)")
# ROCm's fork prints itself (rccl-tests: Version ..., RCCL version 2.x+hipY)
_RCCL = re.compile(r"\brccl-tests\b|\bRCCL version\b", re.IGNORECASE)
# a net plugin setting a variable NCCL then reads: aws-ofi-nccl's
# `NCCL INFO NET/OFI Setting NCCL_PROTO to "simple"` (it does so only where it is unset)
_PLUGIN_SETTING = re.compile(r"\bSetting (NCCL_[A-Z0-9_]+) to \"?([^\"\s]+)\"?")
# nccl-tests -G N / --cudagraph N on its command line (N graph launches; 0: off)
_GRAPH_FLAG = re.compile(r"(?:^|\s)(?:-G\s*|--cudagraph[=\s]\s*)(\d{1,6})(?!\S)")

# nccl-tests v2.13.0 (commit 51af557, 2022-08-19, "Resync with NCCL 2.13") prints one header
# for every op, "size count type redop root time algbw busbw #wrong"; before it each test
# printed its own (no redop or root where the op has none) and an `error` column.
OLD_LAYOUT_NOTE = ("the table's layout (per-op columns, 'error' not '#wrong') is nccl-tests' before "
                   "v2.13.0 (commit 51af557, 2022-08-19); that does not date the NCCL library, "
                   "which an old nccl-tests build loads at run time")


def clean(raw: str) -> str:
    """Drop launcher prefixes and the leading '#', keep the content."""
    text = raw.rstrip("\n")
    for _ in range(4):                  # "2024-...Z (head, pid=1) [1,0]<stdout>:0: ..."
        stripped = _LAUNCHER_PREFIX.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    return text.strip().lstrip("#").strip()


def params(text: str) -> dict:
    # "nThread 1 nGpus 8 minBytes 8 maxBytes 1G step: 2(factor) warmup iters: 5 iters: 20 ..."
    out, tokens = {}, text.replace(":", " ").split()
    i = 0
    while i + 1 < len(tokens):
        key, value = tokens[i], tokens[i + 1]
        if key == "warmup" and value == "iters":
            key, value, i = "warmup_iters", tokens[i + 2] if i + 2 < len(tokens) else "", i + 1
        elif key == "agg" and value == "iters":
            key, value, i = "agg_iters", tokens[i + 2] if i + 2 < len(tokens) else "", i + 1
        out[key] = value
        i += 2
    return out


def library_version(code: int) -> str:
    # NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z before 2.9, X*10000+Y*100+Z since (nccl.h).
    if code >= 20900:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


def remember_versions(text_line: str, run) -> None:
    """What a line outside the table says about the run (`run`: the reader's partial run):
    versions, RCCL, its NCCL_* settings."""
    if _RCCL.search(text_line):
        run.rccl = True
    # NCCL's own "NAME set by environment to V" INFO lines, and the NAME=V settings of a
    # command line before the run (`NCCL_ALGO=Tree ./build/...`, mpirun's `-x NAME=V`)
    if (" set by environment to " in text_line or _NCCL_ASSIGNMENT.search(text_line)) \
            and len(run.env_lines) < 256:
        run.env_lines.append(text_line)
    plugin = _PLUGIN_SETTING.search(text_line)
    if plugin and len(run.env_lines) < 256:
        run.env_lines.append(f"{plugin.group(1)}={plugin.group(2)}")   # as the settings reader reads it
    m = _NCCL_VERSION.search(text_line)
    if m:
        run.nccl_version = m.group(1)
    m = _LIBRARY_CODE.search(text_line)
    if m and run.nccl_version is None:
        run.nccl_version = library_version(int(m.group(1)))
    m = _TESTS_VERSION.search(text_line)
    if m:
        run.tests_version = m.group(1)


def graph_launches(command_line: str) -> int:
    """N of a `-G N` / `--cudagraph N` on an nccl-tests command line (0 when not given)."""
    m = _GRAPH_FLAG.search(command_line)
    return int(m.group(1)) if m else 0


def graph_note(launches: int) -> str:
    return (f"CUDA-graph launches (-G {launches}): nccl-tests replayed each op from a captured "
            f"graph, with lower host overhead per op than the stream launch embsim models; "
            f"not modelled (small sizes read slower in the simulation)")


def old_layout(columns: list[str]) -> bool:
    """A column header of nccl-tests before v2.13.0 (OLD_LAYOUT_NOTE)."""
    return ("redop" not in columns or "root" not in columns
            or any(c.endswith(".error") for c in columns))
