"""``distill tune``: the static model trained toward its teacher.

A sentence is the mean of its tokens' vectors (a torch ``EmbeddingBag``), exactly what the model2vec and
sentence-transformers exports compute: the table trained is the export's own, our words plus, for a run with
piece vectors, the alphabetic pieces unknown words split into, tokenized by the export's tokenizer. It starts
from a run's set prepared for sentences (unit, SIF-weighted) and is trained so that each corpus sentence's
mean points where the teacher's embedding of that sentence points (same width, no projection; the loss,
``--loss``, compares the two: their cosine by default, or their distance, an in-batch contrast, or the batch's
cosine matrices). With ``shared_map`` (the default) one linear map of the width, starting as the identity, is
trained with the rows and applied to every row of the table: the words and pieces that no tuning sentence
holds move with the rest instead of staying where the tuned ones left them. The rows train by lazy (sparse)
Adam: a step updates only the rows its sentences hold, so its cost does not grow with the table.
A seeded tenth of the sentences is held out; training stops when their loss stops falling, and the tuned table
is the start moved ``blend`` of the way to the best epoch's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn import functional

from distill.config import check_device_name
from distill.encoders.huggingface import resolve_device
from distill.errors import ConfigError
from distill.files import atomic_path
from distill.names import set_files, tuned_map_name
from distill.progress import track
from distill.rundir import RunDir
from distill.serve.export import prepared_set, set_pieces
from distill.serve.formats import token_table
from distill.serve.pieces import write_tuned_pieces
from distill.serve.weighting import SentenceRecipe, Weighting
from distill.tune.options import TuneOptions
from distill.tune.resume import SAVE_SECONDS, inputs_digest, read_checkpoint, write_checkpoint
from distill.tune.teacher import read_teacher
from distill.vectors.keyed import to_keyed_vectors

logger = logging.getLogger(__name__)
EVAL_BATCH = 4096  # sentences a batch of the passes without gradients (the held-out loss, the start's norms)


@dataclass
class TuneResult:
    vectors: np.ndarray  # (n_words, dim) float32
    history: list[dict[str, float]] = field(default_factory=list)  # per epoch: train and held-out loss
    best_epoch: int = 0
    sentences: int = 0  # targets trained on: corpus sentences and bags of words
    bags: int = 0  # of them, bags of the language's words (``--teacher-bags``)
    map: np.ndarray | None = None  # (dim, dim): the shared map at the best epoch (None: trained without one)

    def untrained_map(self, blend: float) -> np.ndarray:
        """Where the blended table puts a row no tuning sentence held: ``row @ result.T`` (lazy Adam leaves
        such a row at its start, so only the shared map moves it)."""
        eye = np.eye(self.vectors.shape[1], dtype=np.float32)
        trained = eye if self.map is None else self.map
        return (eye + np.float32(blend) * (trained - eye)).T.astype(np.float32)


def sentence_ids(texts: list[str], tokenizer: Any, unknown: int) -> tuple[list[np.ndarray], np.ndarray]:
    """Each sentence's token rows as the export's ``tokenizer`` gives them (``unknown`` left out), and which
    sentences have any."""
    encoded = tokenizer.encode_batch(texts, add_special_tokens=False)
    ids = [np.array([i for i in e.ids if i != unknown], dtype=np.int64) for e in encoded]
    keep = np.array([len(i) > 0 for i in ids], dtype=bool)
    return [i for i, k in zip(ids, keep) if k], keep


def bag_batches(
    ids: list[np.ndarray], order: np.ndarray, size: int
) -> list[tuple[torch.Tensor, torch.Tensor, np.ndarray]]:
    """The sentences ``order`` in batches of ``size``, each as an ``EmbeddingBag`` takes it: the rows flat, each
    sentence's offset, and which sentences they are."""
    out = []
    for lo in range(0, len(order), size):
        rows = order[lo : lo + size]
        parts = [ids[r] for r in rows]
        offsets = torch.from_numpy(np.cumsum([0] + [len(p) for p in parts[:-1]]))
        out.append((torch.from_numpy(np.concatenate(parts)), offsets, rows))
    return out


def tuning_device(device: str) -> torch.device:
    """Where a table trains: the GPU ``device`` names (auto: one when there is one), else the CPU, since the
    lazy Adam's sparse rows are for CUDA and CPUs."""
    check_device_name(device)
    on = resolve_device(device)
    return on if on.type == "cuda" else torch.device("cpu")


def held_out_split(n: int, train_only: int, share: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A seeded ``share`` of the first ``n - train_only`` targets held out, and the rest with the last
    ``train_only`` (bags of words, never held out) to train on."""
    order = rng.permutation(n - train_only)
    n_held = max(1, int(share * len(order)))
    return order[:n_held], np.concatenate([order[n_held:], np.arange(len(order), n)])


class Student(torch.nn.Module):
    """The table being trained: each sentence the mean of its rows, then (``shared_map``) one linear map."""

    def __init__(self, vectors: np.ndarray, shared_map: bool) -> None:
        super().__init__()
        self.bag = torch.nn.EmbeddingBag.from_pretrained(  # sparse: a step costs the rows its batch holds
            torch.from_numpy(vectors.astype(np.float32)), freeze=False, mode="mean", sparse=True
        )
        self.map: torch.nn.Linear | None = None
        if shared_map:
            self.map = torch.nn.Linear(vectors.shape[1], vectors.shape[1], bias=False)
            with torch.no_grad():
                self.map.weight.copy_(torch.eye(vectors.shape[1]))

    def forward(self, flat: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        means = self.bag(flat, offsets)
        return means if self.map is None else self.map(means)

    def table(self) -> np.ndarray:
        """The trained table as an export reads it: the map applied to every row (a mean of mapped rows is the
        mapped mean)."""
        rows = self.bag.weight.detach()
        return (rows if self.map is None else rows @ self.map.weight.detach().T).cpu().numpy().copy()

    def optimizers(self, learning_rate: float) -> list[torch.optim.Optimizer]:
        """Adam for the rows, lazily (a row moves only in the steps whose batch holds it), and for the map."""
        out: list[torch.optim.Optimizer] = [torch.optim.SparseAdam([self.bag.weight], lr=learning_rate)]
        if self.map is not None:
            out.append(torch.optim.Adam(self.map.parameters(), lr=learning_rate))
        return out


def batch_loss(
    model: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    batch: tuple[torch.Tensor, torch.Tensor, np.ndarray],
    targets: torch.Tensor,
    options: TuneOptions,
) -> torch.Tensor:
    """How far the batch's sentence means are from the teacher: ``cosine``, one minus each mean's cosine with
    its target; ``mse``, the squared distance to it (targets scaled to the start's norms by ``tune``);
    ``contrastive``, in-batch InfoNCE (each mean nearer its own target than the batch's others); ``relational``,
    the squared gap between the batch's cosine matrix and the teacher's (only the similarities, what STS scores).
    """
    flat, offsets, rows = batch
    device = targets.device
    means = model(flat.to(device), offsets.to(device))
    goal = targets[torch.from_numpy(rows).to(device)]
    if options.loss == "cosine":
        return 1 - functional.cosine_similarity(means, goal, dim=1).mean()
    if options.loss == "mse":
        return functional.mse_loss(means, goal)
    student, teacher = functional.normalize(means, dim=1), functional.normalize(goal, dim=1)
    if options.loss == "contrastive":
        logits = student @ teacher.T / options.temperature
        return functional.cross_entropy(logits, torch.arange(len(rows), device=device))
    return ((student @ student.T - teacher @ teacher.T) ** 2).mean()


def held_out_loss(
    model: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    batches: list[tuple[torch.Tensor, torch.Tensor, np.ndarray]],
    targets: torch.Tensor,
    options: TuneOptions,
) -> float:
    """The mean of ``batch_loss`` over the held-out ``batches``, without gradients: what tuning stops on."""
    with torch.no_grad():
        return float(np.mean([batch_loss(model, b, targets, options).item() for b in batches]))


def tune(
    vectors: np.ndarray,
    ids: list[np.ndarray],
    targets: np.ndarray,
    options: TuneOptions = TuneOptions(),
    progress: bool = False,
    train_only: int = 0,
    device: str = "cpu",
    checkpoint: Path | None = None,
) -> TuneResult:
    """Train the rows ``vectors`` (n_rows, dim) so that the mean of each sentence's rows (``ids``) points where
    the teacher's embedding of it (``targets``, one per sentence) points; with ``options.shared_map``, through one
    linear map trained with them and applied to every row of the result. The last ``train_only`` targets (bags of
    words) are trained on but never held out: training stops on corpus sentences alone. ``device``: where the
    table trains (:func:`tuning_device`); the result comes back to the host. ``checkpoint``: a file the state is
    saved to after an epoch (no sooner than :data:`SAVE_SECONDS` after the last save, and after the last
    epoch), and resumed from when it holds this tuning's: the result is the one an unstopped tuning gives."""
    if targets.shape[1] != vectors.shape[1]:
        raise ConfigError(
            f"the teacher's embeddings have {targets.shape[1]} dimensions, the vectors {vectors.shape[1]}"
        )
    if len(ids) < 20:
        raise ConfigError(f"only {len(ids)} sentences hold a word of the vocabulary: too few to tune on")
    torch.manual_seed(options.seed)
    rng = np.random.default_rng(options.seed)
    held, train = held_out_split(len(ids), train_only, options.held_out, rng)
    on = tuning_device(device)
    goal = torch.from_numpy(np.ascontiguousarray(targets, dtype=np.float32)).to(on)
    student = Student(vectors, options.shared_map).to(on)
    if options.loss == "mse":  # the teacher's scale is not the table's: match the median norms first
        corpus = bag_batches(ids, np.arange(len(ids) - train_only), EVAL_BATCH)  # the sentences, not the bags
        with torch.no_grad():
            start = torch.cat([student(flat.to(on), offsets.to(on)) for flat, offsets, _ in corpus])
        goal *= start.norm(dim=1).median() / goal.norm(dim=1).median()
    optimizers = student.optimizers(options.learning_rate)
    held_batches = bag_batches(ids, held, EVAL_BATCH)
    result = TuneResult(vectors.astype(np.float32).copy(), sentences=len(ids))
    digest = inputs_digest(vectors, ids, targets, options, train_only, on) if checkpoint else ""
    saved = read_checkpoint(checkpoint, digest, on) if checkpoint else None
    if saved is None:
        best, first, done = held_out_loss(student, held_batches, goal, options), 1, False
        result.history.append({"epoch": 0, "train": float("nan"), "held_out": best})
    else:
        best, first, done = _restore(saved, student, optimizers, rng, result)
    last_save = time.monotonic()
    epochs = range(first, options.epochs + 1 if not done else first)
    for epoch in track(epochs, "tuning", "epoch", len(epochs), not progress):
        losses = []
        for batch in bag_batches(ids, rng.permutation(train), options.batch_size):
            for optimizer in optimizers:
                optimizer.zero_grad()
            loss = batch_loss(student, batch, goal, options)
            loss.backward()
            for optimizer in optimizers:
                optimizer.step()
            losses.append(loss.detach())  # read once an epoch: a GPU never waits for a step's loss
        train_loss = torch.stack(losses).double().mean().item()
        held_loss = held_out_loss(student, held_batches, goal, options)
        result.history.append({"epoch": epoch, "train": train_loss, "held_out": held_loss})
        logger.info("tune epoch %d: train %.4f, held out %.4f", epoch, train_loss, held_loss)
        if held_loss < best:
            best, result.best_epoch = held_loss, epoch
            result.vectors = student.table()
            result.map = None if student.map is None else student.map.weight.detach().cpu().numpy().copy()
        done = epoch == options.epochs or epoch - result.best_epoch >= options.patience
        if checkpoint and (done or time.monotonic() - last_save >= SAVE_SECONDS):
            write_checkpoint(checkpoint, _state(digest, epoch, done, best, student, optimizers, rng, result))
            last_save = time.monotonic()
        if done:
            break
    return result


def _state(
    digest: str,
    epoch: int,
    done: bool,
    best: float,
    student: Student,
    optimizers: list[torch.optim.Optimizer],
    rng: np.random.Generator,
    result: TuneResult,
) -> dict[str, Any]:
    """What :func:`tune` needs to go on after ``epoch`` (``done``: nothing more to train)."""
    return {
        "digest": digest, "epoch": epoch, "done": done, "best": best, "best_epoch": result.best_epoch,
        "history": result.history, "rng": rng.bit_generator.state, "student": student.state_dict(),
        "optimizers": [o.state_dict() for o in optimizers], "vectors": torch.from_numpy(result.vectors),
        "map": None if result.map is None else torch.from_numpy(result.map),
    }  # fmt: skip


def _restore(
    state: dict[str, Any],
    student: Student,
    optimizers: list[torch.optim.Optimizer],
    rng: np.random.Generator,
    result: TuneResult,
) -> tuple[float, int, bool]:
    """Put ``state`` back (:func:`_state`); returns the best held-out loss, the next epoch and whether done."""
    student.load_state_dict(state["student"])
    for optimizer, saved in zip(optimizers, state["optimizers"], strict=True):
        optimizer.load_state_dict(saved)
    rng.bit_generator.state = state["rng"]
    result.history = list(state["history"])
    result.best_epoch = int(state["best_epoch"])
    result.vectors = state["vectors"].cpu().numpy().copy()
    result.map = None if state["map"] is None else state["map"].cpu().numpy().copy()
    return float(state["best"]), int(state["epoch"]) + 1, bool(state["done"])


@dataclass
class ExportTable:
    """A set's export table before training, with what it was built from."""

    name: str
    words: list[str]
    counts: np.ndarray | None
    pieces: Any  # the set's PieceVectors, or None
    tokenizer: Any
    start: np.ndarray  # (n_rows, dim): words, pieces, the unknown row last

    def sentence_ids(self, texts: list[str]) -> tuple[list[np.ndarray], np.ndarray]:
        """Each text's rows in this table, and which texts have any (:func:`sentence_ids`)."""
        return sentence_ids(texts, self.tokenizer, len(self.start) - 1)


@dataclass
class TunedTable(ExportTable):
    """A set's export table before and after training (blend 1)."""

    result: TuneResult

    def blended(self, blend: float) -> np.ndarray:
        """The start moved ``blend`` of the way to the trained table."""
        return self.start + np.float32(blend) * (self.result.vectors - self.start)


def export_table(run: RunDir, name: str, recipe: SentenceRecipe) -> ExportTable:
    """The export table of set ``name`` of ``run``, the recipe baked in: what ``distill tune`` trains."""
    kv, counts, _, start = prepared_set(run, name, recipe)
    words = list(kv.index_to_key)
    pieces = set_pieces(run.path, name)
    tokenizer, rows = token_table(words, start, bool(run.manifest()["vocabulary"]["lowercase"]), pieces)
    return ExportTable(name, words, counts, pieces, tokenizer, rows)


def train_table(
    run: RunDir,
    name: str,
    recipe: SentenceRecipe,
    options: TuneOptions,
    progress: bool = False,
    sentences: int | None = None,
    device: str = "cpu",
    checkpoint: Path | None = None,
) -> TunedTable:
    """Train the export table of set ``name`` (the recipe baked in) toward the teacher embeddings the run kept
    (``sentences``: a seeded sample of that many of them, for learning curves; ``checkpoint``: :func:`tune`'s)."""
    table = export_table(run, name, recipe)
    ids, targets, bags = tuning_targets(run, table, options, sentences)
    result = tune(table.start, ids, targets, options, progress, bags, device=device, checkpoint=checkpoint)
    result.bags = bags
    return TunedTable(**vars(table), result=result)


def tuning_targets(
    run: RunDir, table: ExportTable, options: TuneOptions, sentences: int | None = None
) -> tuple[list[np.ndarray], np.ndarray, int]:
    """What :func:`tune` trains ``table`` on: each kept text's rows and the teacher's embedding of it, the bags
    last, and how many bags (``sentences``: a seeded sample of that many texts)."""
    texts, targets, bags = read_teacher(run.path)
    if not options.bags:  # the corpus sentences alone: the bags follow them
        texts, targets, bags = texts[: len(texts) - bags], targets[: len(texts) - bags], 0
    ids, keep = table.sentence_ids(texts)
    targets = targets[keep]
    is_bag = (np.arange(len(texts)) >= len(texts) - bags)[keep]  # the bags follow the sentences
    if sentences is not None and sentences < len(ids):
        chosen = np.sort(np.random.default_rng(options.seed).choice(len(ids), sentences, replace=False))
        ids, targets, is_bag = [ids[i] for i in chosen], targets[chosen], is_bag[chosen]
    return ids, targets, int(is_bag.sum())


def write_map(path: Path, matrix: np.ndarray) -> Path:
    """A tuned set's map for words read alone (:meth:`TuneResult.untrained_map`), as ``map`` in an ``.npz``."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, map=matrix.astype(np.float32))
    return path


def tune_run(
    run_dir: str | Path,
    vector_set: str | None = None,
    recipe: SentenceRecipe = SentenceRecipe(Weighting.SIF),
    options: TuneOptions = TuneOptions(),
    progress: bool = False,
    recommend: bool = False,
    device: str = "cpu",
    checkpoint: Path | None = None,
) -> tuple[str, Any, TuneResult]:
    """Tune a set of a run (default: its recommended set) toward the teacher embeddings it kept; the tuned
    words are written into the run as the set ``<set>.tuned`` (ready for sentences: export it with
    ``--weighting none``, which ``auto`` chooses for it), its tuned pieces and its map for words read alone
    beside it; ``recommend``: the tuned set becomes the run's recommended set; ``device``: where it trains;
    ``checkpoint``: where a tuning stopped part way goes on from (:func:`tune`)."""
    run = RunDir(run_dir)
    table = train_table(
        run, run.resolve_set(vector_set), recipe, options, progress, device=device, checkpoint=checkpoint
    )
    rows, words = table.blended(options.blend), table.words
    tuned_name = f"{table.name}.tuned"
    tuned = to_keyed_vectors(words, rows[: len(words)], table.counts)
    run.replacing_set(tuned_name, tuned)  # tuned before with other options: its exports describe other vectors
    run.write_set(tuned_name, tuned)
    files = set_files(tuned_name)
    if table.pieces is not None and len(rows) > len(words) + 1:
        files.append(write_tuned_pieces(run.path, tuned_name, table.pieces, table.tokenizer, rows, len(words)).name)
    files.append(write_map(run.path / tuned_map_name(tuned_name), table.result.untrained_map(options.blend)).name)
    record = {
        "tuned_from": table.name,
        "alone_map": tuned_map_name(tuned_name),
        "sentence_ready": True,
        "recipe": recipe.to_json(),
        "options": options.to_json(),
        "sentences": table.result.sentences,
        "bags": table.result.bags,
        "best_epoch": table.result.best_epoch,
        "history": table.result.history,
    }
    run.add_set(tuned_name, record, files, recommend)
    return tuned_name, tuned, table.result
