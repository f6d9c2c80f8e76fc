"""How contextual is each layer (Ethayarajh 2019, section 4), from the occurrences a distillation collects.

Per layer:
- anisotropy: mean cosine between the representations of uniformly random occurrences (random words
  in random contexts) -- the baseline the other measures are adjusted by;
- self-similarity: for each word with at least ``min_occurrences`` occurrences, the mean pairwise cosine
  of its occurrences, averaged over words;
- intra-sentence similarity: mean cosine between each token of a sentence and the sentence's mean
  vector, averaged over sentences (computed during the forward pass, over all text tokens of each model
  window, special tokens excluded);
- maximum explainable variance (MEV): sigma_1^2 / sum sigma_i^2 of a word's uncentered occurrence matrix,
  averaged over words; its baseline is the MEV of matrices of as many random occurrences as the word has
  (a matrix of few rows has a large first component by chance), averaged over the same words. Also
  ``mev_centered``, the same of the centered matrix: the share of variance ``PCA(n_components=1)``
  explains, which is what the paper's < 5% finding measures;
Each is reported raw and adjusted (minus its baseline). No second forward pass is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from distill.errors import ConfigError
from distill.reduction import batched_first_pc, iter_word_blocks


@dataclass
class IntraSentence:
    """Running sums of per-window intra-sentence similarity, one per layer; fed batch by batch."""

    layers: tuple[int, ...]
    total: np.ndarray = field(init=False)
    count: int = 0

    def __post_init__(self) -> None:
        self.total = np.zeros(len(self.layers), dtype=np.float64)

    def observe(
        self,
        hidden: Sequence[torch.Tensor],
        ids: torch.Tensor,
        content: torch.Tensor,
        fresh: torch.Tensor | None = None,
        sentences: Sequence[tuple[int, str, int]] | None = None,
    ) -> None:
        """``hidden``: all hidden states (B, T, D); ``content``: (B, T) bool, the text tokens of each window."""
        mask = content.to(hidden[0].device)
        n = mask.sum(dim=1)
        keep = n >= 2  # one token is trivially similar to itself
        if not bool(keep.any()):
            return
        weights = mask[keep].float()[:, :, None]
        for i, layer in enumerate(self.layers):
            h = hidden[layer][keep].float() * weights
            mean = torch.nn.functional.normalize(h.sum(dim=1), dim=1)  # (b, D)
            unit = torch.nn.functional.normalize(h, dim=2)  # padding rows stay zero
            cos = torch.einsum("btd,bd->bt", unit, mean).sum(dim=1) / n[keep]
            self.total[i] += float(cos.sum())
        self.count += int(keep.sum())

    def state(self) -> dict[str, np.ndarray]:
        return {"total": self.total, "count": np.array(self.count)}

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        self.total = np.array(state["total"], dtype=np.float64)
        self.count = int(state["count"])

    def empty(self) -> IntraSentence:
        return IntraSentence(self.layers)

    def merge(self, state: dict[str, np.ndarray]) -> None:
        """Add the sums of another instance (a Ray worker's chunk)."""
        self.total = self.total + state["total"]
        self.count += int(state["count"])

    def means(self) -> dict[int, float]:
        return {
            layer: float(t / self.count) if self.count else float("nan") for layer, t in zip(self.layers, self.total)
        }


def top_squared_singular_value(x: torch.Tensor, block: int = 8, iters: int = 8, seed: int = 0) -> torch.Tensor:
    """sigma_1^2 of each (m, d) matrix of a (G, m, d) batch, by block subspace iteration.

    The Rayleigh-Ritz value converges with the ratio sigma_{block+1} / sigma_1, fast even where
    sigma_2 / sigma_1 is close to 1 (centered occurrence matrices), unlike single-vector power iteration.
    """
    # Scaled to a largest entry of 1, and the small k x k problem solved in float64: a word whose
    # occurrences are all identical centers to rounding noise, whose Gram matrix LAPACK cannot solve.
    scale = x.abs().amax(dim=(1, 2)).clamp(min=torch.finfo(x.dtype).tiny)
    x = x / scale[:, None, None]
    gen = torch.Generator(device="cpu").manual_seed(seed)
    d = x.shape[2]
    k = min(block, d, x.shape[1])
    q = torch.linalg.qr(torch.randn(x.shape[0], d, k, generator=gen, dtype=x.dtype).to(x.device)).Q
    for _ in range(iters):
        q = torch.linalg.qr(torch.bmm(x.transpose(1, 2), torch.bmm(x, q))).Q
    xq = torch.bmm(x, q)  # (G, m, k)
    top = torch.linalg.eigvalsh(torch.bmm(xq.transpose(1, 2), xq).double())[:, -1]
    return (top * scale.double() ** 2).to(x.dtype)


def self_similarity_and_mev(
    matrix: np.ndarray,
    offsets: np.ndarray,
    filled: np.ndarray,
    *,
    position: np.ndarray | None = None,
    device: torch.device | str = "cpu",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per word: mean pairwise cosine of its occurrences, sigma_1^2 / ||X||_F^2 of its occurrence matrix, and the
    same of the centered matrix (what ``PCA(1).explained_variance_ratio_`` gives); NaN under 2 / 1 / 2 rows."""
    n_words = len(offsets) - 1
    self_sim = np.full(n_words, np.nan)
    mev = np.full(n_words, np.nan)
    mev_centered = np.full(n_words, np.nan)
    for ids, x in iter_word_blocks(matrix, offsets, position=position, device=device):
        x = x.float()
        n = torch.from_numpy(filled[ids].astype(np.float64)).to(x.device)
        total = torch.nn.functional.normalize(x, dim=2).sum(dim=1)  # zero rows add nothing
        pairs = n * (n - 1)
        sim = ((total.double() ** 2).sum(dim=1) - n) / torch.where(pairs > 0, pairs, 1.0)
        _, sigma = batched_first_pc(x)
        energy = (x.double() ** 2).sum(dim=(1, 2))
        ratio = sigma.double() ** 2 / torch.where(energy > 0, energy, 1.0)
        valid = (torch.arange(x.shape[1], device=x.device)[None, :] < n[:, None]).to(x.dtype)  # (G, m)
        centered = (x - (x.sum(dim=1) / n.clamp(min=1).to(x.dtype)[:, None])[:, None, :]) * valid[:, :, None]
        c_energy = (centered.double() ** 2).sum(dim=(1, 2))
        c_ratio = top_squared_singular_value(centered).double() / torch.where(c_energy > 0, c_energy, 1.0)
        self_sim[ids] = np.where(filled[ids] >= 2, sim.cpu().numpy(), np.nan)
        mev[ids] = np.where(filled[ids] >= 1, ratio.cpu().numpy(), np.nan)
        mev_centered[ids] = np.where(filled[ids] >= 2, c_ratio.cpu().numpy(), np.nan)
    return self_sim, mev, mev_centered


def anisotropy(vectors: np.ndarray) -> float:
    """Mean cosine over all distinct pairs of rows of ``vectors`` (n, d)."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    total = unit.sum(axis=0)
    n = len(unit)
    return float((total @ total - n) / (n * (n - 1)))


def size_grid(sizes: np.ndarray, points: int = 24) -> list[int]:
    """At most ``points`` matrix sizes, geometrically spaced over ``sizes``, at which baselines are computed."""
    lo, hi = int(np.min(sizes)), int(np.max(sizes))
    return sorted({round(float(x)) for x in np.geomspace(lo, hi, points)} | {lo, hi})


def nearest_size(grid: list[int], n: int) -> int:
    """The grid size closest to ``n`` in ratio (baselines change smoothly with the number of rows)."""
    return min(grid, key=lambda g: abs(np.log(g / n)))


def random_baselines(
    matrix: np.ndarray,
    rows: np.ndarray,
    rng: np.random.Generator,
    sizes: np.ndarray,
    n_sample: int = 2000,
    repeats: int = 4,
) -> tuple[float, dict[int, float], dict[int, float]]:
    """Anisotropy (mean cosine of ``n_sample`` random occurrences) and, for each size of :func:`size_grid` over
    ``sizes``, the MEV (uncentered, centered) of matrices of that many random occurrences: a word's MEV is
    compared with random matrices of (about) its own size, since a matrix of few rows has a large first
    component by chance."""
    sample = matrix[np.sort(rng.choice(rows, size=min(n_sample, len(rows)), replace=False))].astype(np.float64)
    uncentered, centered = {}, {}
    for size in size_grid(sizes):
        size = min(size, len(rows))
        u, c = [], []
        for _ in range(repeats):
            x = matrix[np.sort(rng.choice(rows, size=size, replace=False))].astype(np.float64)
            s = np.linalg.svd(x, compute_uv=False)
            u.append(s[0] ** 2 / (s**2).sum())
            s = np.linalg.svd(x - x.mean(axis=0), compute_uv=False)
            c.append(s[0] ** 2 / max((s**2).sum(), 1e-300))
        uncentered[size], centered[size] = float(np.mean(u)), float(np.mean(c))
    return anisotropy(sample), uncentered, centered


def analyze_layers(
    matrices: dict[int, np.ndarray],
    offsets: np.ndarray,
    filled: np.ndarray,
    words: Sequence[str],
    *,
    position: np.ndarray | None = None,
    intra: IntraSentence | None = None,
    min_occurrences: int = 5,
    seed: int = 0,
    device: torch.device | str = "cpu",
    stopwords: frozenset[str] | None = None,
) -> dict[str, Any]:
    """Every measure for every layer; ``words`` in vocabulary order (most frequent first)."""
    if stopwords is None:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        stopwords = frozenset(ENGLISH_STOP_WORDS)
    eligible = filled >= min_occurrences
    if not eligible.any():
        raise ConfigError(
            f"no word has {min_occurrences} or more occurrences to measure; "
            "use a larger corpus or raise --max-occurrences"
        )
    rank = np.arange(len(words))
    groups = {
        "stopwords": eligible & np.array([w.lower() in stopwords for w in words]),
        "other words": eligible & np.array([w.lower() not in stopwords for w in words]),
        "rank < 100": eligible & (rank < 100),
        "rank 100-999": eligible & (rank >= 100) & (rank < 1000),
        "rank 1000+": eligible & (rank >= 1000),
    }
    filled_rows = np.flatnonzero(position < len(position)) if position is not None else None
    intra_means = intra.means() if intra is not None else {}
    layers: dict[str, Any] = {}
    for layer, matrix in matrices.items():
        rng = np.random.default_rng([seed, layer])
        stored = position[filled_rows] if position is not None else np.flatnonzero(np.abs(matrix).sum(axis=1) > 0)
        base, mev_by_size, centered_by_size = random_baselines(
            matrix, stored, rng, np.minimum(filled[eligible], len(stored))
        )
        self_sim, mev, centered = self_similarity_and_mev(matrix, offsets, filled, position=position, device=device)
        sizes = np.minimum(filled[eligible], len(stored))
        grid = sorted(mev_by_size)
        nearest = {int(n): nearest_size(grid, int(n)) for n in np.unique(sizes)}
        mev_base_w = np.array([mev_by_size[nearest[int(n)]] for n in sizes])
        centered_base_w = np.array([centered_by_size[nearest[int(n)]] for n in sizes])
        mev_base, centered_base = float(mev_base_w.mean()), float(centered_base_w.mean())
        record = {
            "anisotropy": base,
            "self_similarity": float(np.nanmean(self_sim[eligible])),
            "self_similarity_adjusted": float(np.nanmean(self_sim[eligible]) - base),
            "mev": float(np.nanmean(mev[eligible])),
            "mev_baseline": mev_base,
            "mev_adjusted": float(np.nanmean(mev[eligible] - mev_base_w)),
            "mev_share_under_5_percent": float(np.mean(mev[eligible] < 0.05)),
            "mev_centered": float(np.nanmean(centered[eligible])),
            "mev_centered_baseline": centered_base,
            "mev_centered_adjusted": float(np.nanmean(centered[eligible] - centered_base_w)),
            "mev_centered_share_under_5_percent": float(np.mean(centered[eligible] < 0.05)),
            "mev_centered_adjusted_share_under_5_percent": float(np.mean(centered[eligible] - centered_base_w < 0.05)),
            "self_similarity_by_group": {
                name: float(np.nanmean(self_sim[mask])) if mask.any() else float("nan") for name, mask in groups.items()
            },
        }
        if layer in intra_means:
            record["intra_sentence"] = intra_means[layer]
            record["intra_sentence_adjusted"] = intra_means[layer] - base
        layers[str(layer)] = record
    return {
        "min_occurrences": min_occurrences,
        "words_measured": int(eligible.sum()),
        "sentences_measured": intra.count if intra is not None else 0,
        "group_sizes": {name: int(mask.sum()) for name, mask in groups.items()},
        "layers": layers,
    }
