"""Static vectors for the model's own pieces, and vectors for out-of-vocabulary words built from them.

With ``--pieces`` a run also averages, per layer, the hidden state of every text token it encodes
by token id: ``layerL.pieces.npz`` holds ``vectors`` (n_pieces, d) and ``counts`` (n_pieces,). A word
without a vector then gets the mean of its pieces' vectors (pieces never seen are left out), the
pieces found with the model's tokenizer and character offsets, as in the distillation itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from distill.encoding.workers import writer_threads
from distill.errors import ConfigError
from distill.files import atomic_path, member, read_npz
from distill.names import layer_set, pieces_name, tuned_pieces_name
from distill.paths import check_run_model_there
from distill.rundir import RunDir
from distill.vectors.postprocess import combine


@dataclass
class PieceSums:
    """Running sum and count of the hidden states of each token id, per layer; fed batch by batch."""

    layers: tuple[int, ...]
    n_pieces: int
    dim: int
    sums: dict[int, torch.Tensor] = field(init=False, default_factory=dict)
    counts: torch.Tensor = field(init=False, default_factory=lambda: torch.zeros(0, dtype=torch.int64))

    def _on(self, device: torch.device) -> None:
        """The sums on ``device``: made there at the first batch (a GPU run never holds its n_pieces x d float64
        sums per layer on the host), moved there after a resume."""
        if len(self.sums) != len(self.layers):
            self.counts = torch.zeros(self.n_pieces, dtype=torch.int64, device=device)
            self.sums = {layer: torch.zeros(self.n_pieces, self.dim, dtype=torch.float64, device=device)
                         for layer in self.layers}  # fmt: skip
        elif self.counts.device != device:
            self.counts = self.counts.to(device)
            self.sums = {layer: sums.to(device) for layer, sums in self.sums.items()}

    def observe(
        self,
        hidden: Sequence[torch.Tensor],
        ids: torch.Tensor,
        content: torch.Tensor,
        fresh: torch.Tensor | None = None,
        sentences: Sequence[tuple[int, str, int]] | None = None,
    ) -> None:
        """Add each text token's hidden states to its id's sums, once per token of the sentence (``fresh``).
        The sums live on the hidden states' device: a GPU run never waits to copy them to the host. The tokens
        are picked on the host (``ids`` and the masks are host tensors), so that the device is never asked how
        many there are: a boolean index on a GPU tensor would wait for it, once per layer."""
        device = hidden[0].device
        self._on(device)
        mask = (fresh if fresh is not None else content).flatten().cpu()
        where = torch.nonzero(mask).squeeze(1)
        token_ids = ids.flatten().cpu()[where]
        pin = device.type == "cuda"
        if pin:
            where, token_ids = where.pin_memory(), token_ids.pin_memory()
        where, token_ids = where.to(device, non_blocking=pin), token_ids.to(device, non_blocking=pin)
        self.counts.index_add_(0, token_ids, torch.ones_like(token_ids))
        for layer in self.layers:
            self.sums[layer].index_add_(0, token_ids, hidden[layer].flatten(0, 1).index_select(0, where).double())

    def state(self) -> dict[str, np.ndarray]:
        self._on(self.counts.device)
        return {"counts": self.counts.cpu().numpy(),
                **{f"sums{layer}": self.sums[layer].cpu().numpy() for layer in self.layers}}  # fmt: skip

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        self.counts = torch.from_numpy(np.array(state["counts"]))
        self.sums = {layer: torch.from_numpy(np.array(state[f"sums{layer}"])) for layer in self.layers}

    def vectors(self, layer: int) -> np.ndarray:
        """(n_pieces, d) float32 means; zero for pieces never seen."""
        self._on(self.counts.device)
        counts = self.counts.clamp(min=1).double()[:, None]
        return (self.sums[layer] / counts).float().cpu().numpy()

    def write(self, out: Path) -> list[Path]:
        """Each layer's file, several at once where the machine has the cores."""
        self._on(self.counts.device)
        counts = self.counts.cpu().numpy()

        def write_layer(layer: int) -> Path:
            return write_pieces(out / pieces_name(layer), self.vectors(layer), counts)

        with ThreadPoolExecutor(max_workers=writer_threads()) as pool:
            return list(pool.map(write_layer, self.layers))


def write_pieces(path: Path, vectors: np.ndarray, counts: np.ndarray, scaled: bool = False) -> Path:
    """Piece vectors, sparse: the rows of the pieces seen (count > 0) with their ids, and the number of pieces,
    so that a file's size follows the corpus, not the model's vocabulary."""
    ids = np.flatnonzero(counts > 0).astype(np.int32)
    arrays: dict[str, Any] = {"ids": ids, "vectors": vectors[ids], "counts": counts[ids],
                              "n_pieces": np.array(len(counts))}  # fmt: skip
    if scaled:
        arrays["scaled"] = np.array(True)
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, **arrays)
    return path


def read_pieces(path: Path, n_tokens: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """A piece file's (vectors, counts) by token id, dense (a piece never seen: zeros), and whether they are
    at their set's scale; files written before pieces were kept sparse are dense already."""
    data = read_npz(path, ("vectors", "counts"))
    vectors, counts, scaled = data["vectors"], data["counts"], bool(data.get("scaled", False))
    if "ids" in data:
        ids, n = data["ids"], int(data.get("n_pieces", -1))
        ok = vectors.ndim == 2 and ids.ndim == 1 and len(ids) == len(vectors) == len(counts) and n >= 0
        if not ok or (len(ids) and (ids.min() < 0 or ids.max() >= n or len(np.unique(ids)) < len(ids))):
            raise ConfigError(f"{path} holds piece ids that do not match its vectors; it is damaged")
        dense, dense_counts = np.zeros((n, vectors.shape[1]), np.float32), np.zeros(n, counts.dtype)
        dense[ids], dense_counts[ids] = vectors, counts
        vectors, counts = dense, dense_counts
    if vectors.ndim != 2 or len(vectors) < n_tokens or len(counts) != len(vectors):
        raise ConfigError(f"{path} does not hold a vector for each piece of the run's tokenizer; it is damaged")
    return vectors, counts, scaled


@dataclass
class PieceVectors:
    """OOV fallback: a word's vector as the mean of its pieces' static vectors."""

    tokenizer: Any
    vectors: np.ndarray  # (n_pieces, d)
    counts: np.ndarray  # (n_pieces,)
    lowercase: bool = False
    scaled: bool = False  # already at their set's scale (tuned with it): exports keep their norms
    own: np.ndarray | None = None  # (n_pieces,) bool: rows that are a word's own vector (:meth:`with_words`)

    @classmethod
    def open(cls, run_dir: str | Path, layer: int) -> PieceVectors | None:
        """The run's piece vectors for ``layer`` and the model's tokenizer; None if the run made none."""
        found = cls.open_layers(run_dir, [layer])
        return found[0] if found else None

    @classmethod
    def open_layers(cls, run_dir: str | Path, layers: Sequence[int]) -> list[PieceVectors] | None:
        """The run's piece vectors of each of ``layers`` (one tokenizer for all); None if one is missing."""
        return cls.open_files(run_dir, [pieces_name(layer) for layer in layers])

    @classmethod
    def open_files(cls, run_dir: str | Path, names: Sequence[str]) -> list[PieceVectors] | None:
        """The piece vectors in the run's files ``names`` (one tokenizer for all); None if one is missing."""
        run = RunDir(run_dir)
        paths = [member(run.path, name) for name in names]
        if not all(path.is_file() for path in paths):
            return None
        from transformers import AutoTokenizer

        manifest = run.manifest()
        model = manifest["model"]
        check_run_model_there(str(model["source"]), "words the set lacks are split into pieces")
        try:
            tokenizer = AutoTokenizer.from_pretrained(
                model["source"],
                revision=model.get("revision"),
                gguf_file=model.get("gguf_file"),
                trust_remote_code=False,
            )
        except (OSError, ValueError) as err:
            raise ConfigError(
                f"cannot load the tokenizer of {manifest['model']['source']} for OOV words: {err}"
            ) from err
        lowercase = bool(manifest["vocabulary"]["lowercase"])
        found = []
        for path in paths:
            vectors, counts, scaled = read_pieces(path, len(tokenizer))
            found.append(cls(tokenizer, vectors, counts, lowercase, scaled))
        return found

    @property
    def own_rows(self) -> np.ndarray:
        """(n_pieces,) bool: the rows :meth:`with_words` gave a word's own vector (exports keep their norms)."""
        return np.zeros(len(self.vectors), dtype=bool) if self.own is None else self.own

    def with_words(self, words: Sequence[str], vectors: np.ndarray) -> PieceVectors:
        """A copy in which each of ``words`` that the tokenizer reads as one piece gives that piece its row
        (``vectors``'): a word an export leaves out (``--top-words``) keeps its vector where it is one piece. A
        tuned set needs this most: its table held the word, so the piece of the same text never had a row."""
        rows, counts, own = self.vectors.copy(), self.counts.copy(), self.own_rows.copy()
        for row, ids in zip(vectors, self.pieces_of(words), strict=True):
            if len(ids) == 1:
                rows[ids[0]], counts[ids[0]], own[ids[0]] = row, max(counts[ids[0]], 1), True
        return replace(self, vectors=rows, counts=counts, own=own)

    @property
    def has_vector(self) -> np.ndarray:
        """(n_pieces,) bool: the pieces whose row is not all zeros (seen, or given a row since)."""
        return np.any(self.vectors != 0, axis=1)

    def pieces(self, word: str) -> list[int]:
        """Token ids of ``word`` as it appears after a space in running text (offsets, not string surgery)."""
        return self.pieces_of([word])[0]

    def pieces_of(self, words: Sequence[str]) -> list[list[int]]:
        """:meth:`pieces` of each of ``words``, tokenized in one batch."""
        texts = ["a " + (word.lower() if self.lowercase else word) for word in words]
        enc = self.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
        return [[i for i, (start, end) in zip(ids, offsets) if end > 2 and start >= 1]
                for ids, offsets in zip(enc["input_ids"], enc["offset_mapping"])]  # fmt: skip

    def vector(self, word: str, ids: list[int] | None = None) -> np.ndarray | None:
        """Mean of the seen pieces' vectors (``ids``: the word's pieces, when known); None when no piece of the
        word was ever seen."""
        seen = [i for i in (self.pieces(word) if ids is None else ids) if self.counts[i] > 0]
        return self.vectors[seen].mean(axis=0) if seen else None


def with_rows(pieces: PieceVectors, ids: Sequence[int], rows: np.ndarray) -> PieceVectors:
    """``pieces`` with ``rows`` for the pieces ``ids`` (their counts kept: the corpus still never showed them)."""
    vectors = pieces.vectors.copy()
    vectors[list(ids)] = rows
    return replace(pieces, vectors=vectors)


def set_layers(manifest: dict[str, Any], set_name: str) -> tuple[list[int], str | None] | None:
    """The layers a set of a run comes from and how it combines them (None: a layer set of its own); None
    for a set single vectors cannot follow (top directions removed, whitened, tuned)."""
    recipe = (manifest.get("derived") or {}).get(set_name)
    if recipe is None:
        found = layer_set(set_name)
        return None if found is None else ([found[0]], None)
    if recipe.get("remove_top") is not None or recipe.get("whiten") or "tuned_from" in recipe:
        return None
    return list(recipe["layers"]), str(recipe.get("combine", "mean"))


@dataclass
class SetFallback:
    """A vector for any word a set lacks, in the set's space: the mean of the word's pieces' vectors in each
    layer the set comes from, combined as the set combines its layers (unit vectors averaged)."""

    layers: list[PieceVectors]
    combine: str | None = None  # None: a layer set; else how a derived set combines its layers
    source: ClassVar[str] = "pieces"  # what a vector from this fallback is called

    @classmethod
    def open(cls, run_dir: str | Path, set_name: str) -> SetFallback | None:
        """The fallback of ``set_name`` in a run made with ``--pieces``; None when the run has no piece vectors
        for its layers, or the set is post-processed in a way single vectors cannot follow (top directions
        removed, whitened). A tuned set falls back as the set it was tuned from."""
        manifest = RunDir(run_dir).manifest()
        recipe = (manifest.get("derived") or {}).get(set_name)
        if recipe is not None and "tuned_from" in recipe:  # its own tuned pieces, else those it started from
            tuned = PieceVectors.open_files(run_dir, [tuned_pieces_name(set_name)])
            return cls(tuned) if tuned else cls.open(run_dir, str(recipe["tuned_from"]))
        found_layers = set_layers(manifest, set_name)
        if found_layers is None:
            return None
        layers, how = found_layers
        found = PieceVectors.open_layers(run_dir, layers)
        return cls(found, how) if found else None

    def piece_vectors(self) -> PieceVectors:
        """One vector per piece in the set's space (a layer's own, or the layers' combined): the token
        table the static-model exports give pieces outside the vocabulary."""
        first = self.layers[0]
        if self.combine is None:
            return first
        table = combine([layer.vectors for layer in self.layers], self.combine)
        return PieceVectors(first.tokenizer, table.astype(np.float32), first.counts, first.lowercase)

    def vectors(self, words: Sequence[str]) -> list[np.ndarray | None]:
        """Each word's fallback vector (see :meth:`vector`)."""
        return [self.vector(word) for word in words]

    def vector(self, word: str) -> np.ndarray | None:
        """The word's fallback vector; None when none of its pieces was ever seen (or their mean is zero: no
        direction)."""
        ids = self.layers[0].pieces(word)
        found = [layer.vector(word, ids) for layer in self.layers]
        parts = [p for p in found if p is not None]
        if len(parts) < len(found):
            return None
        vector = parts[0] if self.combine is None else combine([p[None, :] for p in parts], self.combine)[0]
        return vector if np.any(vector) else None


def write_tuned_pieces(
    run_dir: Path, set_name: str, pieces: PieceVectors, tokenizer: Any, rows: np.ndarray, n_words: int
) -> Path:
    """Save the piece rows of a tuned export table (the rows after its ``n_words`` words, the unknown row last) by
    the model's token ids, as :class:`PieceVectors` at their tuned scale; returns the file. A piece whose text is
    a word of the table (``queen``, ``Ġqueen``) gets the word's tuned row: the table held the word, never that
    piece, and an unknown word that splits into it (or an export that leaves the word out) reads it."""
    vectors = np.zeros_like(pieces.vectors, dtype=np.float32)
    model = pieces.tokenizer.get_vocab()
    for token, row in tokenizer.get_vocab().items():
        if row < len(rows) - 1 and token in model and (row >= n_words or pieces.counts[model[token]] > 0):
            vectors[model[token]] = rows[row]
    return write_pieces(Path(run_dir) / tuned_pieces_name(set_name), vectors, pieces.counts, True)
