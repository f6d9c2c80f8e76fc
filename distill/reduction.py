"""Reduce each word's occurrence matrix to one vector: first principal component or mean.

The first principal component is the top right singular vector of the *uncentered* occurrence
matrix (what ``TruncatedSVD(n_components=1)`` computes), signed so that its dot product with the
mean occurrence is positive, unit norm. Many words are reduced at once on the device by power
iteration started from the mean direction; the few words that do not converge are solved exactly.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator

import numpy as np
import torch

from distill.config import Pooling
from distill.progress import progress_bar

logger = logging.getLogger(__name__)


def first_principal_component(occurrences: np.ndarray) -> np.ndarray:
    """Reference for one word: (n, d) -> (d,) unit vector, by numpy's SVD."""
    x = np.asarray(occurrences, dtype=np.float64)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    pc = vt[0]
    if pc @ x.sum(axis=0) < 0:
        pc = -pc
    return pc.astype(np.float32)


def batched_first_pc(x: torch.Tensor, max_iter: int = 30, tol: float = 1e-5) -> tuple[torch.Tensor, torch.Tensor]:
    """Top right singular vectors of a batch of matrices.

    ``x``: (G, m, d), zero rows allowed (they change neither the PC nor its sign).
    Returns (G, d) unit vectors signed toward the row sum, and (G,) first singular values.
    Words whose step falls under ``tol`` leave the iteration (the stopped error is about
    ``tol * r^2 / (1 - r^2)`` for a singular value ratio r); those still moving after ``max_iter``
    steps are solved exactly.
    """
    total = x.sum(dim=1)  # (G, d)
    v = torch.nn.functional.normalize(total, dim=1)
    dead = total.norm(dim=1) == 0  # a mean of zero gives no start: use the largest row instead
    if dead.any():
        rows = x[dead]
        pick = rows.norm(dim=2).argmax(dim=1)
        v[dead] = torch.nn.functional.normalize(rows[torch.arange(len(rows)), pick], dim=1)
    active = torch.arange(len(x), device=x.device)  # words still iterating
    sigma = torch.zeros(len(x), dtype=x.dtype, device=x.device)
    xs, vs = x, v
    for _ in range(max_iter):
        # x^T (x v) as the row vector (x v)^T x: both products read x in its own layout
        xv = torch.bmm(xs, vs[:, :, None])
        sigma[active] = xv.norm(dim=(1, 2))  # |x v| of the step's start: off by O(step^2) relative
        w = torch.nn.functional.normalize(torch.bmm(xv.transpose(1, 2), xs).squeeze(1), dim=1)
        moving = (w - vs).norm(dim=1) >= tol
        v[active] = w
        if not bool(moving.any()):
            active = active[:0]
            break
        if int(moving.sum()) < 0.75 * len(active):  # drop the converged words from the batch
            active, xs, w = active[moving], xs[moving], w[moving]
        vs = w
    if len(active):
        logger.debug("power iteration: %d of %d words solved exactly", len(active), len(x))
        v[active] = _exact_first_pc(x[active]).to(v.dtype)
        sigma[active] = torch.einsum("gmd,gd->gm", x[active], v[active]).norm(dim=1)
    sign = torch.where((v * total).sum(dim=1) < 0, -1.0, 1.0).to(v.dtype)
    return v * sign[:, None], sigma


def _exact_first_pc(x: torch.Tensor) -> torch.Tensor:
    """Top right singular vectors of (G, m, d) by one batched symmetric eigensolve, in float64."""
    x = x.double()
    if x.shape[1] <= x.shape[2]:  # the (m, m) Gram matrix is the smaller one
        _, vectors = torch.linalg.eigh(x @ x.transpose(1, 2))
        v = torch.einsum("gmd,gm->gd", x, vectors[:, :, -1])
    else:
        _, vectors = torch.linalg.eigh(x.transpose(1, 2) @ x)
        v = vectors[:, :, -1]
    return torch.nn.functional.normalize(v, dim=1)


def iter_word_blocks(
    matrix: np.ndarray | torch.Tensor,
    offsets: np.ndarray,
    *,
    position: np.ndarray | None = None,
    device: torch.device | str = "cpu",
    max_elements: int = 2**25,
) -> Iterator[tuple[np.ndarray, torch.Tensor]]:
    """Words in groups of similar size: (word ids (G,), their rows as a zero-padded (G, m, d) tensor).

    Word ``w`` owns logical rows ``offsets[w]:offsets[w+1]`` of ``matrix`` (n_rows, d), a numpy array or a
    tensor on any device (a GPU store is gathered where it lives); with ``position``, logical row r lives at
    ``matrix[position[r]]`` (the store's append order). Groups pad at most 2x and hold about
    ``max_elements`` numbers.
    """
    n_words = len(offsets) - 1
    dim = matrix.shape[1]
    source = matrix if isinstance(matrix, torch.Tensor) else _as_tensor(matrix)
    sizes = np.diff(offsets)
    order = np.argsort(-sizes, kind="stable")
    negative_sorted = -sizes[order]  # ascending
    i = 0
    while i < n_words:
        width = int(sizes[order[i]])
        similar = int(np.searchsorted(negative_sorted, -(width / 2), side="right")) - i  # pad at most 2x
        group = max(1, min(similar, max_elements // max(1, width * dim)))
        ids = order[i : i + group]
        steps = np.arange(width)
        valid = steps[None, :] < sizes[ids][:, None]  # (G, width)
        rows = np.where(valid, offsets[ids][:, None] + steps[None, :], 0).ravel()
        index = torch.from_numpy(rows if position is None else position[rows]).to(source.device)
        # one gather; torch's index_select runs on every core, numpy's fancy indexing on one
        block = torch.index_select(source, 0, index).view(len(ids), width, dim).to(device).float()
        if not valid.all():
            block.masked_fill_(torch.from_numpy(~valid).to(block.device)[:, :, None], 0.0)
        yield ids, block
        i += group


def _as_tensor(matrix: np.ndarray) -> torch.Tensor:
    with warnings.catch_warnings():  # a read-only memory map of the store: it is only ever read here
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(np.asarray(matrix))


def reduce_words(
    matrix: np.ndarray | torch.Tensor,
    offsets: np.ndarray,
    filled: np.ndarray,
    pooling: Pooling,
    *,
    position: np.ndarray | None = None,
    device: torch.device | str = "cpu",
    max_elements: int | None = None,
    normalize: bool = False,
    progress: bool = False,
    desc: str = "reducing",
) -> np.ndarray:
    """One vector per word from its rows ``offsets[w]:offsets[w+1]`` of ``matrix`` (n_rows, d).

    ``filled``: (n_words,) rows of each word really encoded (unfilled rows are zero). With
    ``position``, logical row r lives at ``matrix[position[r]]`` (the store's append order). Words are
    processed in groups of similar size, padded with zero rows, of about ``max_elements`` numbers
    (default: 4M on a CPU, where a group that stays in the core's cache through the power iteration's
    steps beats a large one; 32M on a GPU), on ``device``; the vectors stay there until the last group is
    done. Returns (n_words, d) float32; words with no filled row get a zero vector (the caller drops them).
    """
    device = torch.device(device)
    if max_elements is None:
        max_elements = 2**22 if device.type == "cpu" else 2**25
    out = torch.zeros((len(offsets) - 1, matrix.shape[1]), dtype=torch.float32, device=device)
    bar = progress_bar(len(out), desc, "word", not progress)
    blocks = iter_word_blocks(matrix, offsets, position=position, device=device, max_elements=max_elements)
    for ids, x in blocks:
        if pooling is Pooling.PC:
            vectors, _ = batched_first_pc(x)
        else:
            count = torch.from_numpy(np.maximum(filled[ids], 1).astype(np.float32)).to(x.device)
            vectors = x.sum(dim=1) / count[:, None]
        if normalize:
            vectors = torch.nn.functional.normalize(vectors, dim=1)
        out[torch.from_numpy(ids).to(device)] = vectors.float()
        bar.update(len(ids))
    bar.close()
    result = out.cpu().numpy()
    result[filled == 0] = 0.0
    return result


def explained_variance_ratio(occurrences: np.ndarray) -> float:
    """Share of the (uncentered) energy of an occurrence matrix along its first PC: s1^2 / sum s_i^2."""
    s = np.linalg.svd(np.asarray(occurrences, dtype=np.float64), compute_uv=False)
    total = float((s**2).sum())
    return float(s[0] ** 2 / total) if total > 0 else 0.0
