"""Ways to add a batch's hidden states to the piece sums (``--pieces``), timed on the device, against the product's.

    python benchmarks/piece_sums.py --device cuda [--batches 40] [--layers 13] [--tokens 32768]

The sixth GPU session found the piece sums costing a BERT-base run of every layer 2.9 s of its encode stage
(RESULTS.md), and adding all layers in one launch saved nothing: the cost is the device's work or the host's
picking. Each way below sees the same synthetic batches (BERT-base's shape, token ids drawn by a Zipf law as
text's are, 60 % of them content) and prints its milliseconds a batch: the host's part (picking the tokens,
sorting) and the device's (CUDA events), and how far its sums are from the product's. The ways:

- ``product``: :class:`distill.serve.pieces.PieceSums` as it is (float64 sums, per layer);
- ``stacked``: every layer in one index_add into a (layers, pieces, d) float64 tensor;
- ``float32``: the product's adds into float32 sums (half the bytes, no float64 atomics);
- ``segments``: the ids sorted on the host, each piece's rows summed once a batch in float32, then one float64
  add per piece seen (far fewer atomics on the pieces every sentence holds);
- ``cumsum``: the ids sorted on the host, the sorted rows' running sum in float64 on the device, each piece's sum
  the difference at its last row: one float64 add per piece seen and no atomics on the pieces every sentence holds;
- ``sparse``: each piece's rows summed by a sparse (pieces seen x tokens) matrix of ones times the layer's states
  in float32 (cuSPARSE), then one float64 add per piece seen.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def batches(n: int, layers: int, tokens: int, dim: int, pieces: int, device: Any, seed: int = 0) -> list[Any]:
    """``n`` batches of (hidden states per layer, ids, content mask) of about ``tokens`` padded tokens each."""
    import torch

    rng = np.random.default_rng(seed)
    width = 64
    rows = tokens // width
    zipf = 1.0 / np.arange(1, pieces + 1)  # a piece's share falls as 1/rank, as words' do in text
    out = []
    for _ in range(n):
        ids = torch.from_numpy(rng.choice(pieces, (rows, width), p=zipf / zipf.sum()))
        content = torch.from_numpy(rng.random((rows, width)) < 0.6)
        hidden = [torch.randn(rows, width, dim, device=device, dtype=torch.bfloat16) for _ in range(layers)]
        out.append((hidden, ids, content))
    return out


def picked(ids: Any, content: Any, device: Any) -> tuple[Any, Any]:
    """The product's host part: the content tokens' positions and ids, on the device."""
    import torch

    where = torch.nonzero(content.flatten()).squeeze(1)
    token_ids = ids.flatten()[where]
    pin = device.type == "cuda"
    if pin:
        where, token_ids = where.pin_memory(), token_ids.pin_memory()
    return where.to(device, non_blocking=pin), token_ids.to(device, non_blocking=pin)


def by_piece(ids: Any, content: Any) -> tuple[np.ndarray, np.ndarray]:
    """The host's sort: the content tokens' rows ordered by piece id, and their ids in that order."""
    import torch

    where = torch.nonzero(content.flatten()).squeeze(1).numpy()
    token_ids = ids.flatten().numpy()[where]
    order = np.argsort(token_ids, kind="stable")
    return where[order], token_ids[order]


def moved(arrays: tuple[np.ndarray, ...], device: Any) -> list[Any]:
    """Host arrays on the device, through pinned memory on a GPU."""
    import torch

    pin, out = device.type == "cuda", []
    for array in arrays:
        t = torch.from_numpy(np.ascontiguousarray(array))
        out.append((t.pin_memory() if pin else t).to(device, non_blocking=pin))
    return out


def ways(layers: int, pieces: int, dim: int, device: Any) -> dict[str, tuple[Any, Callable[..., None]]]:
    """Each way's sums (a (layers, pieces, d) tensor) and its add(sums, hidden, ids, content)."""
    import torch

    from distill.serve.pieces import PieceSums

    def product(state: Any, hidden: Any, ids: Any, content: Any) -> None:
        state.observe(hidden, ids, content)

    def stacked(sums: Any, hidden: Any, ids: Any, content: Any) -> None:
        where, token_ids = picked(ids, content, device)
        states = torch.stack([h.flatten(0, 1) for h in hidden])
        sums.index_add_(1, token_ids, states.index_select(1, where).double())

    def float32(sums: Any, hidden: Any, ids: Any, content: Any) -> None:
        where, token_ids = picked(ids, content, device)
        for layer_sums, h in zip(sums, hidden):
            layer_sums.index_add_(0, token_ids, h.flatten(0, 1).index_select(0, where).float())

    def segments(sums: Any, hidden: Any, ids: Any, content: Any) -> None:
        rows_h, ordered = by_piece(ids, content)
        first = np.r_[True, ordered[1:] != ordered[:-1]]
        seen = ordered[first]
        rows, segment_t, seen_t = moved((rows_h, np.cumsum(first) - 1, seen), device)
        for layer_sums, h in zip(sums, hidden):
            part = torch.zeros(len(seen), h.shape[-1], dtype=torch.float32, device=device)
            part.index_add_(0, segment_t, h.flatten(0, 1).index_select(0, rows).float())
            layer_sums.index_add_(0, seen_t, part.double())

    def cumsum(sums: Any, hidden: Any, ids: Any, content: Any) -> None:
        rows_h, ordered = by_piece(ids, content)
        ends = np.flatnonzero(np.r_[ordered[1:] != ordered[:-1], True])
        rows, ends_t, seen_t = moved((rows_h, ends, ordered[ends]), device)
        for layer_sums, h in zip(sums, hidden):
            running = torch.cumsum(h.flatten(0, 1).index_select(0, rows), 0, dtype=torch.float64)
            at_ends = running.index_select(0, ends_t)
            layer_sums.index_add_(0, seen_t, torch.diff(at_ends, dim=0, prepend=torch.zeros_like(at_ends[:1])))

    def sparse(sums: Any, hidden: Any, ids: Any, content: Any) -> None:
        col_h, ordered = by_piece(ids, content)
        first = np.r_[True, ordered[1:] != ordered[:-1]]
        crow, col, seen_t = moved((np.r_[np.flatnonzero(first), len(ordered)], col_h, ordered[first]), device)
        n_tokens = hidden[0].shape[0] * hidden[0].shape[1]
        ones = torch.ones(len(col), dtype=torch.float32, device=device)
        matrix = torch.sparse_csr_tensor(crow, col, ones, (len(seen_t), n_tokens), check_invariants=False)
        for layer_sums, h in zip(sums, hidden):
            layer_sums.index_add_(0, seen_t, torch.sparse.mm(matrix, h.flatten(0, 1).float()).double())

    def zeros(dtype: Any) -> Any:
        return torch.zeros(layers, pieces, dim, dtype=dtype, device=device)

    return {
        "product": (PieceSums(tuple(range(layers)), pieces, dim), product),
        "stacked": (zeros(torch.float64), stacked),
        "float32": (zeros(torch.float32), float32),
        "segments": (zeros(torch.float64), segments),
        "cumsum": (zeros(torch.float64), cumsum),
        "sparse": (zeros(torch.float64), sparse),
    }


def sums_of(state: Any, layers: int) -> np.ndarray:
    """A way's sums as a (layers, pieces, d) float64 array."""
    if hasattr(state, "state"):
        saved = state.state()
        return np.stack([saved[f"sums{layer}"] for layer in range(layers)])
    return np.asarray(state.double().cpu().numpy())


def timed(add: Callable[..., None], state: Any, data: list[Any], device: Any) -> str:
    """One way's milliseconds a batch over ``data`` after three batches of warm-up: host, device, wall."""
    import torch

    for batch in data[:3]:  # warm-up: the kernels' first calls, the allocator
        add(state, *batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(2)] if device.type == "cuda" else []
    host, start = 0.0, time.perf_counter()
    if events:
        events[0].record()
    for batch in data[3:]:
        t0 = time.perf_counter()
        add(state, *batch)
        host += time.perf_counter() - t0
    if events:
        events[1].record()
        torch.cuda.synchronize()
    n = len(data) - 3
    wall = time.perf_counter() - start
    gpu = f"{events[0].elapsed_time(events[1]) / n:7.2f}" if events else "      -"
    return f"host {1000 * host / n:7.2f} ms/batch  device {gpu} ms/batch  wall {1000 * wall / n:7.2f} ms/batch"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--layers", type=int, default=13)
    parser.add_argument("--tokens", type=int, default=32768, help="padded tokens a batch (the GPU's token budget)")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--pieces", type=int, default=30522)
    args = parser.parse_args()
    import torch

    device = torch.device(args.device)
    data = batches(args.batches + 3, args.layers, args.tokens, args.dim, args.pieces, device)
    results: dict[str, np.ndarray] = {}
    for name, (state, add) in ways(args.layers, args.pieces, args.dim, device).items():
        try:
            print(f"{name:9s} {timed(add, state, data, device)}")
        except RuntimeError as error:  # a kernel this build lacks (sparse bf16/float32 on some cards): the rest go on
            print(f"{name:9s} failed: {str(error).splitlines()[0]}")
            continue
        results[name] = sums_of(state, args.layers)
    reference = results["product"]
    scale = float(np.abs(reference).max()) or 1.0
    for name, sums in results.items():
        print(f"{name:9s} largest difference from the product's sums: {np.abs(sums - reference).max() / scale:.2e} "
              "of the largest sum")  # fmt: skip


if __name__ == "__main__":
    main()
