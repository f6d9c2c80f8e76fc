"""Does matching the teacher's similarity between related sentences help ``distill tune``?

    python benchmarks/tune_neighbours.py RUN [--set best] [--weights 0,1,4] [--k 10] [--blends 0.5] [--seed 0]

``distill tune``'s cosine loss moves each sentence's mean toward the teacher's embedding of it, one sentence
at a time. STS scores graded similarity, mostly between sentences on one topic; an error a sentence shares with
its neighbours costs nothing there, an error it does not share costs. Here each step also draws, for each
sentence of the batch, one of its ``--k`` nearest neighbours by the teacher (among the kept targets, no label
and no STS text) and adds ``weight`` x the squared gap between the pair's cosine in the table and in the teacher.
Weight 0 is ``distill tune`` itself (same batches, same stopping on the held-out cosine loss). Each table is
scored as the model2vec export reads sentences: all pairs of STS 2012-2014 (dev) and the MTEB splits.
"""

from __future__ import annotations

import argparse
import sys
import time

import faiss
import numpy as np
import torch
from sts_columns import STS_HEADER, sts_cells, table_score  # benchmarks/, this script's folder
from torch.nn import functional

from distill.evaluation.sentences import load_sts
from distill.rundir import RunDir
from distill.serve.weighting import SentenceRecipe, Weighting
from distill.tune.options import TuneOptions
from distill.tune.teacher import read_teacher
from distill.tune.train import (
    Student,
    TunedTable,
    TuneResult,
    bag_batches,
    batch_loss,
    export_table,
    held_out_loss,
    held_out_split,
)


def neighbours(targets: np.ndarray, k: int) -> np.ndarray:
    """Each target's ``k`` nearest other targets by cosine (n, k)."""
    unit = np.ascontiguousarray(targets / np.linalg.norm(targets, axis=1, keepdims=True), dtype=np.float32)
    index = faiss.IndexFlatIP(unit.shape[1])
    index.add(unit)
    _, found = index.search(unit, k + 1)
    return found[:, 1:]


def train(
    start: np.ndarray,
    ids: list[np.ndarray],
    targets: np.ndarray,
    near: np.ndarray,
    weight: float,
    options: TuneOptions,
    train_only: int,
) -> TuneResult:
    """``distill tune``'s loop (lazy Adam, shared map, held-out cosine loss for stopping) plus the pair term."""
    torch.manual_seed(options.seed)
    rng = np.random.default_rng(options.seed)
    held, train_rows = held_out_split(len(ids), train_only, options.held_out, rng)
    goal = torch.from_numpy(np.ascontiguousarray(targets, dtype=np.float32))
    unit_goal = functional.normalize(goal, dim=1)
    student = Student(start, True)
    optimizers = student.optimizers(options.learning_rate)
    held_batches = bag_batches(ids, held, 4096)
    result = TuneResult(start.astype(np.float32).copy(), sentences=len(ids))
    best = held_out_loss(student, held_batches, goal, options)
    for epoch in range(1, options.epochs + 1):
        for flat, offsets, rows in bag_batches(ids, rng.permutation(train_rows), options.batch_size):
            for optimizer in optimizers:
                optimizer.zero_grad()
            loss = batch_loss(student, (flat, offsets, rows), goal, options)
            if weight > 0:
                partners = near[rows, rng.integers(0, near.shape[1], len(rows))]
                pflat, poffsets, _ = bag_batches(ids, partners, len(partners))[0]
                a = functional.normalize(student(flat, offsets), dim=1)
                b = functional.normalize(student(pflat, poffsets), dim=1)
                teacher = (unit_goal[rows] * unit_goal[partners]).sum(dim=1)
                loss = loss + weight * (((a * b).sum(dim=1) - teacher) ** 2).mean()
            loss.backward()
            for optimizer in optimizers:
                optimizer.step()
        held_loss = held_out_loss(student, held_batches, goal, options)
        print(f"  pair weight {weight:g}, epoch {epoch}: held-out cosine loss {held_loss:.4f}", file=sys.stderr)
        if held_loss < best:
            best, result.best_epoch = held_loss, epoch
            result.vectors = student.table()
        elif epoch - result.best_epoch >= options.patience:
            break
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--set", default=None)
    parser.add_argument("--weights", default="0,1,4", help="of the pair term (0: distill tune's loss alone)")
    parser.add_argument("--k", type=int, default=10, help="neighbours a partner is drawn from")
    parser.add_argument("--blends", default="0.5")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    run = RunDir(args.run)
    table = export_table(run, run.resolve_set(args.set), SentenceRecipe(Weighting.SIF))
    texts, targets, bags = read_teacher(run.path)
    ids, keep = table.sentence_ids(texts)
    targets = targets[keep]
    train_only = int((np.arange(len(texts)) >= len(texts) - bags)[keep].sum())
    t0 = time.perf_counter()
    near = neighbours(targets, args.k)
    print(f"{len(ids):,} targets ({train_only:,} bags); neighbours in {time.perf_counter() - t0:.0f} s")
    pairs = load_sts()
    print(f"| pair weight | k | tuning s | best epoch | blend | {STS_HEADER} |")
    print("|---:|---:|---:|---:|---:|" + "---:|" * 8)
    for weight in (float(w) for w in args.weights.split(",")):
        t0 = time.perf_counter()
        result = train(table.start, ids, targets, near, weight, TuneOptions(seed=args.seed), train_only)
        seconds = time.perf_counter() - t0
        tuned = TunedTable(**vars(table), result=result)
        for blend in (float(b) for b in args.blends.split(",")):
            score = table_score(tuned.blended(blend), table.tokenizer, pairs, f"{blend}")
            print(f"| {weight:g} | {args.k} | {seconds:.0f} | {result.best_epoch} | {blend:g} | {sts_cells(score)} |",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
