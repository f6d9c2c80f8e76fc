"""A run's vector sets: every word's occurrences reduced to one vector per layer and pooling (words the corpus
did not give read alone with ``--model-words``), the sets asked for written while the next is reduced, and the
recommended set derived from them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import Pooling, SetFormat
from distill.corpus import CorpusStats, Vocabulary
from distill.derived import derived_vectors, zero_counts
from distill.encoders import Encoder
from distill.encoding.alone import encode_alone, model_words
from distill.encoding.batches import EncodeStats
from distill.encoding.driver import EncodePass
from distill.encoding.workers import writer_threads
from distill.errors import ConfigError
from distill.names import VOCAB, set_files, set_name
from distill.occurrences import SamplePlan
from distill.parallel import WorkerPool
from distill.plan import Plan
from distill.reduction import reduce_words
from distill.rundir import RunDir, write_vocab
from distill.serve.alone import AloneFallback
from distill.vectors.keyed import l2_normalize, to_keyed_vectors

logger = logging.getLogger(__name__)


@dataclass
class Reduced:
    """The words that have vectors and every set reduced from their occurrences."""

    words: list[str]
    counts: np.ndarray
    keep: np.ndarray  # (n_vocab,) bool: words with at least one encoded occurrence
    filled: np.ndarray  # (n_vocab,) occurrences encoded per word
    vectors: dict[str, Any] = field(default_factory=dict)  # set name -> KeyedVectors
    files: list[str] = field(default_factory=list)
    from_model: int = 0  # words the corpus did not give, from the model's vocabulary (--model-words)
    from_language: int = 0  # words of the recommended set only, from the language's frequent words
    best: tuple[str, dict[str, Any]] | None = None  # the recommended set's name and recipe


@dataclass(frozen=True)
class Encoded:
    """What a run has once its occurrences are encoded: the encoder, the vocabulary and corpus counts, the sample
    and the filled store."""

    encoder: Encoder
    vocab: Vocabulary
    stats: CorpusStats
    sample: SamplePlan
    encoded: EncodePass


def _words_alone(
    plan: Plan, encoder: Encoder, vocab: Vocabulary, result: Reduced, saved: Path | None
) -> np.ndarray | None:
    """``--model-words``: the model's whole words the corpus did not give, encoded alone (kept in ``saved`` as
    they are read); appended to the result's words (count 0). Returns their states (n_layers, n, dim), or None."""
    if not plan.config.model_words:
        return None
    words = model_words(encoder, vocab.lowercase, set(vocab.words))
    if not words:
        return None
    logger.info("%d words of the model's vocabulary encoded alone", len(words))
    config = plan.config
    states = encode_alone(encoder, words, plan.layers, config.batch_size, config.template, config.progress,
                          saved=saved)  # fmt: skip
    result.words += words
    result.counts = np.concatenate([result.counts, np.zeros(len(words), dtype=result.counts.dtype)])
    result.from_model = len(words)
    return states


#: Share of occurrences that may be only the tokenizer's unknown piece before a run is refused.
MAX_UNKNOWN_SHARE = 0.5


def check_unknown(encode: EncodeStats, source: str) -> None:
    """Refuse vectors that would come from the unknown token's states rather than the words."""
    if encode.occurrences and encode.unknown > MAX_UNKNOWN_SHARE * encode.occurrences:
        raise ConfigError(
            f"{encode.unknown:,} of {encode.occurrences:,} occurrences are nothing but the tokenizer's unknown piece: "
            f"the tokenizer of {source} does not fit this corpus (wrong tokenizer files, or another script)"
        )


def write_sets(plan: Plan, run: Encoded, observers: Sequence[Any], saved: Path | None = None) -> Reduced:
    """Every set the plan needs, reduced, and those asked for written; then the recommended set, derived and
    written; then the files of the ``observers`` that keep one (piece vectors, teacher targets). The words read
    alone are kept in ``saved`` (the work folder's) as they are read, for a run killed meanwhile."""
    reduced = reduce_and_write(plan, run.encoder, run.encoded, run.vocab, run.sample, saved)
    if plan.best is not None:
        reduced.best = write_best(plan, run.encoder, reduced, saved)
    for observer in observers:
        reduced.files += [p.name for p in observer.write(plan.out)]
    return reduced


def reduce_and_write(
    plan: Plan, encoder: Encoder, encoded: EncodePass, vocab: Vocabulary, sample: SamplePlan, saved: Path | None = None
) -> Reduced:
    """Reduce every set the plan needs; write those asked for while the next is reduced."""
    check_unknown(encoded.encode, encoder.source)
    store = encoded.store
    filled = store.filled_per_word(sample.offsets)
    keep = filled > 0
    if not keep.any():
        raise ConfigError("no occurrence of any vocabulary word could be aligned to the model's pieces")
    result = Reduced([w for w, k in zip(vocab.words, keep) if k], vocab.counts[keep], keep, filled)
    alone = _words_alone(plan, encoder, vocab, result, saved)
    run, written = RunDir(plan.out), set(plan.sets)
    writer = ThreadPoolExecutor(max_workers=writer_threads())  # sets are written while the next is reduced
    text = text_writers(plan.config.formats)
    pending: list[Future[Any]] = [writer.submit(write_vocab, result.words, result.counts, run.vocab_path)]
    result.files.append(VOCAB)
    try:
        for layer, pooling in plan.reduced:
            name = set_name(layer, pooling)
            matrix = reduce_words(store.layer(layer), sample.offsets, filled, pooling, position=store.position,
                                  device=encoder.device, normalize=plan.config.normalize,
                                  progress=plan.config.progress, desc=name)[keep]  # fmt: skip
            if alone is not None:  # a word read alone: its state (mean), or its direction (the PC of one row)
                rows = alone[plan.layers.index(layer)]
                unit = pooling is Pooling.PC or plan.config.normalize
                matrix = np.vstack([matrix, l2_normalize(rows) if unit else rows])
            kv = result.vectors[name] = to_keyed_vectors(result.words, matrix, result.counts)
            if (layer, pooling) in written:
                pending += run.write_set(
                    name, kv, writer.submit, plan.config.formats, text.executor.submit if text else None
                )
                result.files += set_files(name, plan.config.formats)
        for future in pending:
            future.result()  # raises the first write error (disk full ...) here
    finally:
        writer.shutdown(cancel_futures=True)
        if text is not None:
            text.close()
    return result


def text_writers(formats: Sequence[SetFormat]) -> WorkerPool | None:
    """Processes that write the sets' text files, as many as the writer threads, where those are 4 or more (8
    cores and up): the text formatter's many short numpy calls each take the GIL back, so threads formatting at
    once mostly wait on each other, while a set's rows reach a process through a pipe at a cost that fewer
    writers do not win back; None there, or where no text is asked for."""
    workers = writer_threads()
    if workers < 4 or SetFormat.TXT not in formats:
        return None
    return WorkerPool(workers)


def write_best(plan: Plan, encoder: Encoder, reduced: Reduced, saved: Path | None = None) -> tuple[str, dict[str, Any]]:
    """The recommended set, derived from the vectors in memory (and the words read alone by ``encoder`` with
    ``--alone-weight``) and written like any set."""
    best, vectors = plan.best, reduced.vectors
    assert best is not None

    def read_alone(words: list[str], layers: list[int]) -> tuple[np.ndarray, np.ndarray]:
        config = plan.config
        reader = AloneFallback(encoder, layers, best.combine.value, template=config.template,
                               progress=config.progress, saved=saved, pool=best.pool)  # fmt: skip
        return reader.readings(words)

    words, x, layers, added = derived_vectors(
        best, plan.n_layers, lambda layer, pooling: vectors[set_name(layer, pooling)],
        read_alone,
    )  # fmt: skip
    name = best.name(layers)
    kv = vectors[name] = to_keyed_vectors(words, x, zero_counts(reduced.counts, added))
    reduced.from_language = added
    run = RunDir(plan.out)
    run.write_set(name, kv, formats=plan.config.formats)
    reduced.files += set_files(name, plan.config.formats)
    for layer, pooling in plan.reduced[len(plan.sets) :]:  # sets that only fed the recommended one
        del vectors[set_name(layer, pooling)]
    return name, best.to_json(layers, added)
