"""The teacher's sentence embeddings, taken from the forward pass the distillation already runs.

``--teacher`` keeps, for every encoded sentence, the model's own sentence embedding: its pooling as its
sentence-transformers config says (mean of the last layer's tokens for MiniLM and MPNet; the first token
for CLS pooling), over each window's tokens (special tokens included, as sentence-transformers pools them).
``teacher.npz`` in the run folder holds them in float16 with their sentences, so ``distill tune`` can
train without the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from distill.errors import ConfigError
from distill.files import atomic_path, read_model_json, read_npz
from distill.names import TEACHER


def teacher_pooling(source: str | Path) -> str:
    """``mean`` or ``cls``, from a sentence-transformers folder's pooling config; ``mean`` otherwise."""
    config = Path(source) / "1_Pooling" / "config.json"
    if not config.is_file():
        return "mean"
    data = read_model_json(config)
    if not isinstance(data, dict):
        raise ConfigError(f"{config} is not a sentence-transformers pooling config; the model folder is damaged")
    if data.get("pooling_mode_cls_token"):
        return "cls"
    if data.get("pooling_mode_mean_tokens", True):
        return "mean"
    raise ConfigError(f"{config}: only mean and CLS pooling teachers are supported")


class TeacherTargets:
    """Observer: per sentence, the sum of the pooled token states of its windows and how many tokens."""

    def __init__(self, layer: int, pooling: str = "mean", texts_apart: int = 0) -> None:
        """``texts_apart``: how many of the texts read apart, the first ones, are sentences (``--teacher-texts``);
        the rest are bags."""
        self.layer, self.pooling, self.texts_apart = layer, pooling, texts_apart
        self.index: dict[int, int] = {}  # sentence id -> row
        self.texts: list[str] = []
        self.rows: list[np.ndarray] = []
        self.counts: list[int] = []

    def observe(
        self,
        hidden: Sequence[torch.Tensor],
        ids: torch.Tensor,
        content: torch.Tensor,
        fresh: torch.Tensor | None = None,
        sentences: Sequence[tuple[int, str, int]] | None = None,
    ) -> None:
        if sentences is None:
            raise ValueError("TeacherTargets needs each window's sentence")
        states = hidden[self.layer]
        sizes = torch.tensor([n for _, _, n in sentences])
        if self.pooling == "cls":
            pooled, sizes = states[:, 0].float(), torch.ones_like(sizes)
        else:  # every token of the window, special tokens too, no padding
            mask = (torch.arange(states.shape[1])[None, :] < sizes[:, None]).to(states.device)
            pooled = (states.float() * mask[:, :, None]).sum(dim=1)
        pooled_np = pooled.cpu().numpy()
        for i, (sentence_id, text, _) in enumerate(sentences):
            row = self.index.get(sentence_id)
            if row is None:
                self.index[sentence_id] = len(self.texts)
                self.texts.append(text)
                self.rows.append(pooled_np[i].copy())
                self.counts.append(int(sizes[i]))
            elif self.pooling == "mean":  # a later window of a long sentence
                self.rows[row] += pooled_np[i]
                self.counts[row] += int(sizes[i])

    def __repr__(self) -> str:  # what its sums depend on: names the blocks a run keeps (read_texts)
        return f"TeacherTargets(layer={self.layer}, pooling={self.pooling!r})"

    def empty(self) -> TeacherTargets:
        return TeacherTargets(self.layer, self.pooling, self.texts_apart)

    def merge(self, state: dict[str, np.ndarray]) -> None:
        """Add the sentences of another instance's :meth:`state` (a block of texts read apart), after these
        ones; a sentence both hold adds its sums."""
        for i, text, sums, count in zip(state["ids"], _unpack(state["texts"]), state["sums"], state["counts"]):
            row = self.index.get(int(i))
            if row is None:
                self.index[int(i)] = len(self.texts)
                self.texts.append(text)
                self.rows.append(np.array(sums, dtype=np.float32))
                self.counts.append(int(count))
            else:
                self.rows[row] += sums
                self.counts[row] += int(count)

    def embeddings(self) -> np.ndarray:
        """(n_sentences, dim) pooled embeddings, in the order sentences were first seen."""
        if not self.rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack(self.rows) / np.maximum(np.array(self.counts, dtype=np.float32), 1)[:, None]

    def state(self) -> dict[str, np.ndarray]:
        """The sentences in the order first seen, then the texts read apart (ids below zero) in the order given:
        :func:`~distill.encoding.alone.read_texts` runs them in batches of like length."""
        ids = np.array(list(self.index), dtype=np.int64)
        order = np.lexsort((np.where(ids < 0, -ids, 0), ids < 0))  # stable: the corpus's sentences keep theirs
        sums = np.vstack(self.rows)[order] if self.rows else np.zeros((0, 0), np.float32)
        return {"ids": ids[order], "sums": sums, "counts": np.array(self.counts, dtype=np.int64)[order],
                "texts": _pack([self.texts[i] for i in order])}  # fmt: skip

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        self.index = {int(i): row for row, i in enumerate(state["ids"])}
        self.rows = list(np.array(state["sums"], dtype=np.float32))
        self.counts = [int(c) for c in state["counts"]]
        self.texts = _unpack(state["texts"])

    def write(self, out: Path) -> list[Path]:
        """``teacher.npz``: float16 embeddings and their sentences (the texts read outside the corpus, with ids
        below zero, after the first :attr:`texts_apart` of them, counted as ``bags``)."""
        path = out / TEACHER
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            np.savez(handle, embeddings=self.embeddings().astype(np.float16), texts=_pack(self.texts),
                     layer=np.array(self.layer), pooling=np.array(self.pooling),
                     bags=np.array(sum(i < -self.texts_apart for i in self.index)))  # fmt: skip
        return [path]


class TeacherTexts(NamedTuple):
    """What ``teacher.npz`` holds: the texts, their embeddings (float32), and how many texts at the end are
    bags of words (``--teacher-bags``)."""

    texts: list[str]
    embeddings: np.ndarray
    bags: int


def read_teacher(run_dir: str | Path) -> TeacherTexts:
    """The sentences and teacher embeddings a run kept with ``--teacher``."""
    path = Path(run_dir) / TEACHER
    if not path.is_file():
        raise ConfigError(f"{run_dir} has no {TEACHER}: distil with --teacher to keep the teacher's embeddings")
    data = read_npz(path, ("texts", "embeddings"))
    try:
        texts = _unpack(data["texts"])
    except (UnicodeDecodeError, ValueError) as err:
        raise ConfigError(f"{path} is damaged; run the distillation again with --teacher") from err
    return TeacherTexts(texts, data["embeddings"].astype(np.float32), int(data.get("bags", 0)))


def _pack(texts: list[str]) -> np.ndarray:
    """Sentences as one uint8 array, NUL-separated (no pickled objects in checkpoints)."""
    return np.frombuffer("\0".join(texts).encode("utf-8"), dtype=np.uint8)


def _unpack(data: np.ndarray) -> list[str]:
    text = np.asarray(data, dtype=np.uint8).tobytes().decode("utf-8")
    return text.split("\0") if text else []
