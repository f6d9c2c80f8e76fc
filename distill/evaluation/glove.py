"""A small GloVe (Pennington et al. 2014) in numpy + PyTorch, for same-corpus baselines.

No maintained GloVe package installs on Python 3.11 (``glove-python`` fails to build; ``mittens`` is a
dense full-batch variant), so this follows the reference C implementation: symmetric co-occurrence
counts weighted 1/distance within a window, the weighted least-squares loss with
``f(x) = min(1, (x / x_max) ** alpha)``, AdaGrad from squared gradients started at 1, uniform init in
``[-0.5, 0.5) / dim``, and word + context vectors summed at the end (``-model 2``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch

from distill.progress import track


@dataclass(frozen=True)
class GloveOptions:
    dim: int = 300
    window: int = 10
    epochs: int = 25
    x_max: float = 10.0  # glove's demo value for corpora of millions of words (100 for billions)
    alpha: float = 0.75
    learning_rate: float = 0.05
    batch_size: int = 8192
    seed: int = 0


def cooccurrence(sentences: Iterable[np.ndarray], n_words: int, window: int = 10) -> sp.coo_matrix:
    """Symmetric ``(n_words, n_words)`` counts: a pair ``d`` words apart within ``window`` adds ``1/d``.

    ``sentences`` are arrays of word ids (out-of-vocabulary words already removed, as GloVe's ``cooccur``
    does). Sentences are concatenated and a pair is kept only when both ends are in the same sentence.
    """
    chunks = list(sentences)
    if not chunks:
        raise ValueError("no sentences to count co-occurrences in")
    ids = np.concatenate(chunks).astype(np.int64)
    sentence = np.repeat(np.arange(len(chunks)), [len(c) for c in chunks])
    total = sp.csr_matrix((n_words, n_words), dtype=np.float64)
    for d in range(1, window + 1):
        same = sentence[:-d] == sentence[d:]
        left, right = ids[:-d][same], ids[d:][same]
        weight = np.full(len(left), 1.0 / d)
        total = total + sp.csr_matrix((weight, (left, right)), shape=(n_words, n_words))
    return (total + total.T).tocoo()


def _adagrad(param: torch.Tensor, gradsq: torch.Tensor, rows: torch.Tensor, grads: torch.Tensor, lr: float) -> None:
    """One AdaGrad step on the rows touched: per-row summed gradient, squared into the accumulator first."""
    unique, inverse = torch.unique(rows, return_inverse=True)
    total = torch.zeros((len(unique), *grads.shape[1:]), dtype=grads.dtype).index_add_(0, inverse, grads)
    gradsq.index_add_(0, unique, total.square())
    param.index_add_(0, unique, -lr * total / torch.sqrt(gradsq[unique]))


@dataclass(frozen=True)
class GloveFit:
    """Fitted parameters: word and context vectors ``(n_words, dim)`` and their biases ``(n_words,)``."""

    w: np.ndarray
    c: np.ndarray
    bw: np.ndarray
    bc: np.ndarray

    @property
    def vectors(self) -> np.ndarray:
        """What GloVe writes by default: word + context vectors."""
        return self.w + self.c

    def loss(self, cooc: sp.coo_matrix, x_max: float = 10.0, alpha: float = 0.75) -> float:
        """The GloVe objective ``sum f(x) (w_i.c_j + b_i + b_j - log x)^2``."""
        pred = np.einsum("ij,ij->i", self.w[cooc.row], self.c[cooc.col]) + self.bw[cooc.row] + self.bc[cooc.col]
        f = np.minimum(1.0, (cooc.data / x_max) ** alpha)
        return float((f * (pred - np.log(cooc.data)) ** 2).sum())


def train_glove(cooc: sp.coo_matrix, options: GloveOptions = GloveOptions(), progress: bool = False) -> GloveFit:
    """GloVe parameters fitted to ``cooc`` by AdaGrad, ``options.epochs`` passes over its non-zeros in random order."""
    gen = torch.Generator().manual_seed(options.seed)
    n, dim = cooc.shape[0], options.dim
    rows = torch.from_numpy(cooc.row.astype(np.int64))
    cols = torch.from_numpy(cooc.col.astype(np.int64))
    x = torch.from_numpy(cooc.data.astype(np.float32))
    log_x = torch.log(x)
    weight = torch.clamp((x / options.x_max) ** options.alpha, max=1.0)
    # parameters: word and context vectors, their biases; AdaGrad accumulators start at 1 as in glove.c
    w = (torch.rand(n, dim, generator=gen) - 0.5) / dim
    c = (torch.rand(n, dim, generator=gen) - 0.5) / dim
    bw = (torch.rand(n, generator=gen) - 0.5) / dim
    bc = (torch.rand(n, generator=gen) - 0.5) / dim
    gw, gc, gbw, gbc = torch.ones(n, dim), torch.ones(n, dim), torch.ones(n), torch.ones(n)
    lr = options.learning_rate
    for _ in track(range(options.epochs), "GloVe", "epoch", options.epochs, not progress):
        order = torch.randperm(len(x), generator=gen)
        for start in range(0, len(x), options.batch_size):
            b = order[start : start + options.batch_size]
            i, j = rows[b], cols[b]
            wi, cj = w[i], c[j]
            diff = (wi * cj).sum(1) + bw[i] + bc[j] - log_x[b]
            g = (weight[b] * diff).clamp_(-100.0, 100.0)  # glove.c clips too
            # minibatch AdaGrad: sum each row's gradients over the batch, then one step per row (a frequent
            # word appears many times in a batch; stepping once per appearance would overshoot)
            _adagrad(w, gw, i, g[:, None] * cj, lr)
            _adagrad(c, gc, j, g[:, None] * wi, lr)
            _adagrad(bw, gbw, i, g, lr)
            _adagrad(bc, gbc, j, g, lr)
    return GloveFit(w.numpy(), c.numpy(), bw.numpy(), bc.numpy())
