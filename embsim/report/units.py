"""Formatting of sizes and times for people."""


def human_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def human_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def compute_source_text(source: str) -> str:
    """A run's compute source after a "compute times" label ("kernel model, H100 spec",
    "measured: trace X"), without the "compute: " prefix the label already says."""
    return source.removeprefix("compute: ")

