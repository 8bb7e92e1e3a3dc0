"""The token batches calibrate feeds, and the embedding-gradient sparsity they imply.

Zipf(s) by default (word frequencies follow Zipf's law with s near 1, see
docs/sources/workloads.md); `--corpus FILE` tokenises a real text by words instead, ids
ranked by frequency so the vocabulary cut keeps the most frequent words. Both come from
the simulator's token statistics, so a trace and a simulation see the same tokens.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from embsim.errors import InputError
from embsim.trace import TokenStatsRecord
from embsim.workload.tokens import DEFAULT_ZIPF_S, TokenStats

def name_seed(name: str) -> int:
    """A stable seed from a layer's or table's name (Python's hash() changes per process)."""
    return zlib.crc32(name.encode())


def zipf_ids(vocab: int, shape: tuple[int, ...], seed: tuple[int, ...]) -> np.ndarray:
    """Row ids of `shape`, i.i.d. from the simulator's Zipf distribution over `vocab` rows."""
    return TokenStats.zipf(vocab, DEFAULT_ZIPF_S).sample(np.random.default_rng(list(seed)),
                                                        shape).astype(np.int64)


class ZipfTokens:
    """I.i.d. draws from the simulator's own Zipf distribution (embsim.workload.tokens)."""

    def __init__(self, vocab: int, seq: int, seed: int = 0, s: float = DEFAULT_ZIPF_S):
        self.vocab, self.seq, self.seed, self.s = vocab, seq, seed, s
        self.stats = TokenStats.zipf(vocab, s)

    @property
    def source(self) -> str:
        return f"zipf(s={self.s}, seed={self.seed})"

    def batch(self, rank: int, step: int, batch: int) -> np.ndarray:
        """(batch, seq+1) ids: inputs are [:, :-1], next-token targets [:, 1:]."""
        rng = np.random.default_rng([self.seed, rank, step])
        return self.stats.sample(rng, (batch, self.seq + 1)).astype(np.int64)


class CorpusTokens:
    """Consecutive windows of a real text, tokenised exactly as the simulator's --corpus
    statistics are (embsim.workload.tokens.TokenStats.from_corpus), so both agree."""

    def __init__(self, path: str | Path, vocab: int, seq: int, world: int = 1):
        path = Path(path)
        self.ids = TokenStats.from_corpus(path, vocab=vocab).stream
        if len(self.ids) < seq + 1:
            raise InputError(f"--corpus {path}: {len(self.ids)} words, need at least {seq + 1}")
        self.vocab, self.seq, self.path, self.world = vocab, seq, path, world

    @property
    def source(self) -> str:
        return f"corpus:{self.path.name}"

    def batch(self, rank: int, step: int, batch: int) -> np.ndarray:
        """Consecutive windows: rank r of step t reads the (t*world+r)-th block, wrapping."""
        window = self.seq + 1
        n_windows = len(self.ids) // window
        start = (step * self.world + rank) * batch   # ranks never overlap within a step
        rows = [(start + i) % n_windows for i in range(batch)]
        return np.stack([self.ids[r * window:(r + 1) * window] for r in rows])


def token_source(corpus: str | None, vocab: int, seq: int, seed: int = 0, world: int = 1):
    return CorpusTokens(corpus, vocab, seq, world) if corpus else ZipfTokens(vocab, seq, seed)


def token_stats(source, table: str, batch: int, ranks: int, step: int = 0) -> TokenStatsRecord:
    """Unique rows each rank's batch touches, and the union over all ranks."""
    per_rank = [np.unique(source.batch(r, step, batch)[:, :-1]) for r in range(ranks)]
    union = np.unique(np.concatenate(per_rank))
    return TokenStatsRecord(table=table, vocab=source.vocab, batch=batch, seq=source.seq, ranks=ranks,
                            source=source.source, unique_per_rank=tuple(int(u.size) for u in per_rank),
                            union=int(union.size))
