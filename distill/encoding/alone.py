"""Words the corpus did not provide, encoded alone: the model's states of a word given by itself, in the same
layers and the same space as the corpus vectors (a word of one piece in a window of its own).

``model_words`` finds the model's whole-word tokens (a token that is a word by itself: decoded alone it is
alphabetic and the tokenizer gives it back as that one token), so every word a user is likely to look up
that the model knows as a unit has a vector, whether or not the corpus holds it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from distill.config import AlonePool, Template
from distill.corpus import is_alphabetic
from distill.encoders import Encoder
from distill.encoding.batches import EncodeStats, MergingObserver, encode_batch, make_batch
from distill.encoding.prepare import prepare_sorted
from distill.errors import ConfigError
from distill.files import atomic_path, read_npz
from distill.iterate import batched
from distill.names import alone_block, texts_block
from distill.occurrences import SentenceJob
from distill.progress import progress_bar
from distill.vectors.keyed import l2_normalize

#: Words read alone from which a progress bar (or a line every few seconds in a log) is shown.
PROGRESS_FROM = 10_000
#: Words read alone together: prepared as one chunk, and kept as one file in a run's work folder.
BLOCK = 4096


def model_words(encoder: Encoder, lowercase: bool, known: set[str]) -> list[str]:
    """Whole-word tokens of the encoder's vocabulary not in ``known``, sorted (none for encoders without a
    piece vocabulary, such as ELMo)."""
    tokenizer: Any = getattr(encoder, "tokenizer", None)
    if tokenizer is None:
        return []
    special = set(tokenizer.all_special_ids)
    candidates = []
    for token, token_id in tokenizer.get_vocab().items():
        if token_id in special:
            continue
        text = tokenizer.decode([token_id]).strip()
        if not is_alphabetic(text) or (lowercase and text != text.lower()) or text in known:
            continue
        candidates.append((text, token))
    words = []
    for chunk in batched(sorted(candidates), 4096):
        encodings = tokenizer.backend_tokenizer.encode_batch([text for text, _ in chunk], add_special_tokens=False)
        words += [text for (text, token), enc in zip(chunk, encodings) if enc.tokens == [token]]
    return sorted(set(words))


def encode_alone(
    encoder: Encoder, words: Sequence[str], layers: tuple[int, ...], batch_size: int = 256,
    template: Template = Template(), progress: bool = True, saved: Path | None = None,
    pool: AlonePool = AlonePool.PIECES,
) -> np.ndarray:  # fmt: skip
    """(n_layers, n_words, dim) float32: each word's state in each layer when the model reads it alone, inside
    ``template``'s prompt, pooled as ``pool`` says: the mean of the word's own pieces, the prompt's left out;
    its last piece (the one a causal model reads after the whole word); the mean of every token of the prompt,
    the word's and the prompt's (its special tokens left out); or both, read in one pass: (n_layers, 2 n_words,
    dim), the pieces' means first, then the whole prompt's (:func:`summed` adds them). Progress is shown for
    :data:`PROGRESS_FROM` words or more. ``saved``: a folder of a run's work folder
    (:attr:`~distill.workdir.WorkDir.alone`) where each block of
    :data:`BLOCK` words is kept once read, named for its words and everything its states depend on, so that a
    killed run goes on from the blocks it has, with the same states as a run never stopped."""
    pool, n = AlonePool(pool), len(words)
    spans = 2 if pool is AlonePool.BOTH else 1  # both: the pieces' rows, then the whole prompt's
    out = np.zeros((len(layers), spans * n, encoder.hidden_size), dtype=np.float32)
    jobs = [_job(i, word, template, pool, n) for i, word in enumerate(words)]
    stats = EncodeStats()
    last = pool is AlonePool.LAST  # the blocks' names as before the other poolings
    read: tuple[Any, ...] = (encoder.source, str(encoder.dtype), encoder.device.type, layers, template.text, last,
                             batch_size) + (() if last or pool is AlonePool.PIECES else (pool.value,))  # fmt: skip
    bar = progress_bar(len(words), "reading words alone", "word", not progress or len(words) < PROGRESS_FROM)
    with torch.inference_mode():
        for start, chunk in zip(range(0, len(jobs), BLOCK), batched(jobs, BLOCK)):
            index = np.concatenate([np.arange(start, start + len(chunk)) + part * n for part in range(spans)])
            block = out[:, index]  # a copy: both readings' rows of these words
            path = None if saved is None else saved / alone_block(_digest(read, words[start : start + len(chunk)]))
            if path is None or not _load_block(path, block):
                for cut in batched(prepare_sorted(encoder, chunk, 0, stats), batch_size):
                    rows, vectors = encode_batch(encoder, layers, make_batch(cut, chunk), stats)
                    block[:, _block_rows(rows, start, len(chunk), n)] = vectors.cpu().numpy()
                if path is not None:
                    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
                        np.save(handle, block)
            out[:, index] = block
            bar.update(len(chunk))
    bar.close()
    return out


def summed(states: np.ndarray) -> np.ndarray:
    """(n_layers, n_words, dim): a reading pooled both ways (``encode_alone``'s, 2 n_words rows), each word's
    unit pieces' and unit whole-prompt states summed in each layer."""
    n = states.shape[1] // 2
    return l2_normalize(states[:, :n]) + l2_normalize(states[:, n:])


def _job(i: int, word: str, template: Template, pool: AlonePool, n: int) -> SentenceJob:
    """Word ``i`` in its prompt, with the span (or, pooled both ways, the two spans: rows i and n + i) it pools."""
    text, at = template.fill(word)
    start, end = at, at + len(word)
    if pool is AlonePool.LAST:
        start = max(at, end - 1)  # the last character lies in the last piece only
    if pool is AlonePool.PROMPT:
        start, end = 0, len(text)
    if pool is AlonePool.BOTH:
        return SentenceJob(i, text, np.array([start, 0]), np.array([end, len(text)]), np.array([i, n + i]))
    return SentenceJob(i, text, np.array([start]), np.array([end]), np.array([i]))


def _block_rows(rows: np.ndarray, start: int, size: int, n: int) -> np.ndarray:
    """Where the encoded ``rows`` (out of ``n`` words' rows, or 2n: both readings) lie in a block of ``size``
    words from word ``start`` (its rows: the pieces' readings, then the whole prompt's)."""
    part, i = np.divmod(np.asarray(rows), n)
    return part * size + i - start


def _digest(read: tuple[Any, ...], words: Sequence[str]) -> str:
    """What a block's states depend on, hashed: how the words were read, and the words in their order."""
    return hashlib.sha256(json.dumps([list(map(str, read)), list(words)]).encode()).hexdigest()[:32]


def _load_block(path: Path, block: np.ndarray) -> bool:
    """Fill ``block`` from a block file kept by an earlier try of the same run; False when there is none (or
    it is damaged, or of another shape: the block is then read again)."""
    if not path.is_file() or path.is_symlink():
        return False
    try:
        kept = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        return False
    if kept.shape != block.shape or kept.dtype != block.dtype:
        return False
    block[...] = kept
    return True


def read_texts(
    encoder: Encoder, texts: Sequence[str], observers: Sequence[MergingObserver], batch_size: int = 256,
    progress: bool = True, desc: str = "reading texts", saved: Path | None = None,
) -> None:  # fmt: skip
    """Show the model's reading of each of ``texts`` (each one window: short texts) to the ``observers``, as the
    encoding pass shows them corpus sentences; the text numbered i has the sentence id ``-1 - i``, outside the
    corpus walk's. The texts run in batches of like length, so each observer's state must not depend on the
    order it saw them in (:class:`~distill.tune.teacher.TeacherTargets` keeps them in the order given).
    ``saved``: a folder of a run's work folder (:attr:`~distill.workdir.WorkDir.texts`) where the observers' sums
    of each block of :data:`BLOCK` texts are kept once read, named for the texts and how they were read (the
    encoder, the batch size and each observer's ``repr``), so that a killed run goes on from the blocks it has,
    with the same sums as a run never stopped."""
    jobs = [SentenceJob(-1 - i, text, np.array([0]), np.array([len(text)]), np.array([i])) for i, text in
            enumerate(texts)]  # fmt: skip
    stats = EncodeStats()
    read = (encoder.source, str(encoder.dtype), encoder.device.type, batch_size, *map(repr, observers))
    bar = progress_bar(len(texts), desc, "text", not progress or len(texts) < PROGRESS_FROM)
    with torch.inference_mode():
        for start, chunk in zip(range(0, len(jobs), BLOCK), batched(jobs, BLOCK)):
            block = texts[start : start + len(chunk)]
            path = None if saved is None else saved / texts_block(_digest((*read, start), block))
            states = None if path is None else _load_states(path, len(observers))
            if states is None:
                parts = [observer.empty() for observer in observers]
                for cut in batched(prepare_sorted(encoder, chunk, 0, stats), batch_size):
                    encode_batch(encoder, (encoder.n_layers,), make_batch(cut, chunk), stats, parts)
                states = [part.state() for part in parts]
                if path is not None:
                    _save_states(path, states)
            for observer, state in zip(observers, states):
                observer.merge(state)
            bar.update(len(chunk))
    bar.close()


def _save_states(path: Path, states: list[dict[str, np.ndarray]]) -> None:
    arrays: dict[str, Any] = {f"{i}.{key}": value for i, state in enumerate(states) for key, value in state.items()}
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        np.savez(handle, **arrays)


def _load_states(path: Path, n: int) -> list[dict[str, np.ndarray]] | None:
    """The ``n`` observers' states of a block of texts kept by an earlier try of the same run; None when there is
    none (or it is damaged: the block is then read again)."""
    if not path.is_file() or path.is_symlink():
        return None
    try:
        arrays = read_npz(path)
    except ConfigError:
        return None
    states: list[dict[str, np.ndarray]] = [{} for _ in range(n)]
    for name, value in arrays.items():
        i, _, key = name.partition(".")
        if not i.isdigit() or int(i) >= n:
            return None
        states[int(i)][key] = value
    return states if all(states) else None
