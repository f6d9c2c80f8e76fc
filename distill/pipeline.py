"""The whole chain, step by step: check the options and the model's config -> load the encoder -> count the
corpus and build the vocabulary -> sample occurrences -> encode them (checkpointed) -> reduce each word's
occurrences to one vector per layer and pooling -> write the sets asked for (and the recommended one) ->
measure contextuality (``--analyze``) -> write the manifest, last.

Only this module and :mod:`distill.cli` know the whole chain.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from distill.analysis.measures import IntraSentence, analyze_layers
from distill.analysis.report import write_analysis
from distill.config import Pooling, RunConfig, token_budget
from distill.corpus import CorpusStats, Vocabulary, build_vocabulary, count_words, iter_lines, read_word_list
from distill.derive import derived_vectors, zero_counts
from distill.encoders import Encoder
from distill.encoding.alone import encode_alone, model_words
from distill.encoding.batches import EncodeStats
from distill.encoding.driver import EncodePass, encode_pass, store_kind
from distill.errors import ConfigError
from distill.names import VOCAB, set_files, set_name
from distill.occurrences import SamplePlan, plan_sample
from distill.plan import Plan, load_model, package_versions, plan_run
from distill.progress import track
from distill.reduction import reduce_words
from distill.rundir import RunDir, listed_files, load, write_vocab
from distill.serve.alone import AloneFallback
from distill.serve.pieces import PieceSums
from distill.tune.teacher import TeacherTargets, teacher_pooling
from distill.vectors.keyed import l2_normalize, to_keyed_vectors
from distill.workdir import WorkDir, open_run

logger = logging.getLogger(__name__)


@dataclass
class RunResult:
    """Vectors of a run, keyed by set name (``"layer1.pc"``, ``"layers4-6.mean"``) as the files are named."""

    out: Path
    vectors: dict[str, Any]  # gensim KeyedVectors
    manifest: dict[str, Any]

    def __getitem__(self, key: int | str | tuple[int, str]) -> Any:
        """``result[1]``: layer 1, first pooling; ``result[1, "mean"]``: layer 1, mean pooling;
        ``result["best"]`` or a set's name (``result["layers4-6.mean"]``)."""
        if isinstance(key, str):
            return self.vectors[self.manifest["best"] if key == "best" else key]
        layer, pooling = key if isinstance(key, tuple) else (key, self.manifest["config"]["pooling"][0])
        return self.vectors[set_name(layer, Pooling(pooling))]


class Timings(dict[str, float]):
    """Seconds per step: ``with timings("encode"): ...``."""

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self[name] = time.perf_counter() - t0


@dataclass
class Manifest:
    """``manifest.json``: what was run, on what, with which options, what came out. Written last."""

    distill_version: str
    model: dict[str, Any]
    layers: list[int]
    pooling: list[str]
    corpus: dict[str, Any]
    vocabulary: dict[str, Any]
    occurrences: dict[str, Any]
    encoding: dict[str, Any]
    files: list[str]
    resumed_from_chunk: int | None
    analysis: dict[str, Any] | None
    timings_seconds: dict[str, float]
    config: dict[str, Any]
    versions: dict[str, str]
    derived: dict[str, Any] = field(default_factory=dict)
    best: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        for key in ("derived", "best"):
            if not data[key]:
                del data[key]
        return data


def _lines(plan: Plan, desc: str | None, stats: CorpusStats | None) -> Any:
    lines = iter_lines(plan.corpus, plan.config.encoding_errors, stats, plan.config.split_sentences, listed_files)
    return lines if desc is None else track(lines, desc, "lines", disable=not plan.config.progress)


def count_vocabulary(plan: Plan, lowercase: bool, work: WorkDir, reused: bool) -> tuple[Vocabulary, CorpusStats]:
    """The vocabulary, counted from the corpus (or read back from a checkpoint)."""
    counted = work.load_vocabulary() if reused else None
    if counted is not None:
        logger.info("resuming: vocabulary of %d words from %s", len(counted[0]), work.path)
        return counted
    config, stats = plan.config, CorpusStats()
    counts = count_words(_lines(plan, "counting", stats), lowercase, stats)
    word_list = read_word_list(config.vocab_file, lowercase) if config.vocab_file else None
    vocab = build_vocabulary(counts, lowercase=lowercase, min_count=config.min_count, max_size=config.max_vocab,
                             alpha_only=config.alpha_only, word_list=word_list)  # fmt: skip
    work.save_vocabulary(vocab, stats)
    return vocab, stats


#: Share of occurrences that may be only the tokenizer's unknown piece before a run is refused.
MAX_UNKNOWN_SHARE = 0.5


def check_unknown(encode: EncodeStats, source: str) -> None:
    """Refuse vectors that would come from the unknown token's states rather than the words."""
    if encode.occurrences and encode.unknown > MAX_UNKNOWN_SHARE * encode.occurrences:
        raise ConfigError(
            f"{encode.unknown:,} of {encode.occurrences:,} occurrences are nothing but the tokenizer's unknown piece: "
            f"the tokenizer of {source} does not fit this corpus (wrong tokenizer files, or another script)"
        )


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


def _words_alone(plan: Plan, encoder: Encoder, vocab: Vocabulary, result: Reduced) -> np.ndarray | None:
    """``--model-words``: the model's whole words the corpus did not give, encoded alone; appended to the
    result's words (count 0). Returns their states (n_layers, n, dim), or None."""
    if not plan.config.model_words:
        return None
    words = model_words(encoder, vocab.lowercase, set(vocab.words))
    if not words:
        return None
    logger.info("%d words of the model's vocabulary encoded alone", len(words))
    config = plan.config
    states = encode_alone(encoder, words, plan.layers, config.batch_size, config.alone_template, config.progress)
    result.words += words
    result.counts = np.concatenate([result.counts, np.zeros(len(words), dtype=result.counts.dtype)])
    result.from_model = len(words)
    return states


def _alone_rows(states: np.ndarray, index: int, pooling: Pooling, config: RunConfig) -> np.ndarray:
    """One layer's vectors of words encoded alone: the state (mean pooling) or its direction (the first PC of a
    single row, signed toward it)."""
    rows = states[index]
    return l2_normalize(rows) if pooling is Pooling.PC or config.normalize else rows


def reduce_and_write(
    plan: Plan, encoder: Encoder, encoded: EncodePass, vocab: Vocabulary, sample: SamplePlan
) -> Reduced:
    """Reduce every set the plan needs; write those asked for while the next is reduced."""
    store = encoded.store
    filled = store.filled_per_word(sample.offsets)
    keep = filled > 0
    if not keep.any():
        raise ConfigError("no occurrence of any vocabulary word could be aligned to the model's pieces")
    result = Reduced([w for w, k in zip(vocab.words, keep) if k], vocab.counts[keep], keep, filled)
    alone = _words_alone(plan, encoder, vocab, result)
    run, written = RunDir(plan.out), set(plan.sets)
    writer = ThreadPoolExecutor(max_workers=1)  # set N is written while set N+1 is reduced
    pending: list[Future[Any]] = [writer.submit(write_vocab, result.words, result.counts, run.vocab_path)]
    result.files.append(VOCAB)
    try:
        for layer, pooling in plan.reduced:
            name = set_name(layer, pooling)
            matrix = reduce_words(store.layer(layer), sample.offsets, filled, pooling, position=store.position,
                                  device=encoder.device, normalize=plan.config.normalize,
                                  progress=plan.config.progress, desc=name)[keep]  # fmt: skip
            if alone is not None:
                matrix = np.vstack([matrix, _alone_rows(alone, plan.layers.index(layer), pooling, plan.config)])
            kv = result.vectors[name] = to_keyed_vectors(result.words, matrix, result.counts)
            if (layer, pooling) in written:
                pending += run.write_set(name, kv, writer.submit)
                result.files += set_files(name)
        for future in pending:
            future.result()  # raises the first write error (disk full ...) here
    finally:
        writer.shutdown(cancel_futures=True)
    return result


def write_best(plan: Plan, encoder: Encoder, reduced: Reduced) -> tuple[str, dict[str, Any]]:
    """The recommended set, derived from the vectors in memory (and the words read alone by ``encoder`` with
    ``--alone-weight``) and written like any set."""
    best, vectors = plan.best, reduced.vectors
    assert best is not None

    def read_alone(words: list[str], layers: list[int]) -> np.ndarray:
        config = plan.config
        reader = AloneFallback(encoder, layers, best.combine.value, template=config.alone_template,
                               progress=config.progress)  # fmt: skip
        return reader.matrix(words)

    words, x, layers, added = derived_vectors(
        best, plan.n_layers, lambda layer, pooling: vectors[set_name(layer, pooling)],
        read_alone,
    )  # fmt: skip
    name = best.name(layers)
    kv = vectors[name] = to_keyed_vectors(words, x, zero_counts(reduced.counts, added))
    reduced.from_language = added
    run = RunDir(plan.out)
    run.write_set(name, kv)
    reduced.files += set_files(name)
    for layer, pooling in plan.reduced[len(plan.sets) :]:  # sets that only fed the recommended one
        del vectors[set_name(layer, pooling)]
    return name, best.to_json(layers, added)


def analyze(
    plan: Plan,
    encoder: Encoder,
    encoded: EncodePass,
    vocab: Vocabulary,
    sample: SamplePlan,
    intra: IntraSentence | None,
    stats: CorpusStats,
    reduced: Reduced,
    seconds: float,
) -> dict[str, Any]:
    """``--analyze``: contextuality measures from the occurrences in the store; writes their files."""
    t0 = time.perf_counter()
    store = encoded.store
    analysis = analyze_layers(store.host_matrices(), sample.offsets, reduced.filled, vocab.words,
                              position=store.position, intra=intra, seed=plan.config.seed,
                              device=encoder.device)  # fmt: skip
    elapsed = time.perf_counter() - t0
    analysis.update(
        model=plan.config.model,
        corpus=", ".join(Path(str(f["path"])).name for f in stats.files),
        label=f"{Path(plan.config.model.rstrip('/')).name}",
        seconds=elapsed,
        distill_seconds=seconds,
    )
    reduced.files += [p.name for p in write_analysis(analysis, plan.out)]
    return {k: analysis[k] for k in ("words_measured", "sentences_measured", "seconds")}


def _model_record(plan: Plan, encoder: Encoder) -> dict[str, Any]:
    return {
        "name": plan.config.model,
        "source": plan.source,
        "revision": encoder.revision,
        "gguf_file": plan.gguf_file,
        "n_layers": encoder.n_layers,
        "hidden_size": encoder.hidden_size,
        "uncased": encoder.uncased,
        "max_length": encoder.max_length,
        "device": str(encoder.device),
        "dtype": str(encoder.dtype).removeprefix("torch."),
        "layers_run": encoder.layers_run,
        "attention": getattr(encoder, "attention", None),
    }


def build_manifest(plan: Plan, encoder: Encoder, vocab: Vocabulary, stats: CorpusStats, sample: SamplePlan,
                   encoded: EncodePass, reduced: Reduced, lowercase: bool) -> Manifest:  # fmt: skip
    """The manifest of a finished run (timings and analysis are filled in by the caller)."""
    config, encode, store = plan.config, encoded.encode, encoded.store
    dropped = dict(vocab.dropped)
    if (~reduced.keep).any():
        dropped["no alignable occurrence"] = int((~reduced.keep).sum())
    versions = package_versions()
    corpus_record = {"files": stats.files, "lines": stats.lines, "empty_lines": stats.empty_lines,
                     "lines_with_replaced_bytes": stats.replaced_lines, "words": stats.words}  # fmt: skip
    occurrences = {
        "planned": sample.n_rows,
        "encoded": encode.occurrences,
        "not_aligned": encode.not_aligned,
        "unknown_token": encode.unknown,
        "per_word_max": config.max_occurrences,
        "per_word_mean": float(reduced.filled[reduced.keep].mean()),
        "sampling": encoded.sampling,
        "store_dtype": store.dtype.name,
        "store": store_kind(store),
    }
    encoding = {"sentences": encode.sentences, "windows": encode.windows, "long_sentences": encode.long_sentences,
                "tokens": encode.tokens, "tokens_per_second": encode.tokens / max(encode.seconds, 1e-9),
                "batch_tokens": token_budget(config.batch_tokens, encoder.device)}  # fmt: skip
    options = config.to_json()
    options["corpus"] = list(plan.corpus)
    return Manifest(
        distill_version=versions.get("distill", "dev"),
        model=_model_record(plan, encoder),
        layers=list(plan.layers),
        pooling=[p.value for p in dict.fromkeys(p for _, p in plan.reduced)],
        corpus=corpus_record,
        vocabulary={
            "size": len(reduced.words),
            "lowercase": lowercase,
            "candidates": len(vocab),
            "dropped": dropped,
            "from_model_vocabulary": reduced.from_model,
            "from_language_words": reduced.from_language,
        },
        occurrences=occurrences,
        encoding=encoding,
        files=reduced.files,
        resumed_from_chunk=encoded.resumed_chunks or None,
        analysis=None,
        timings_seconds={},
        config=options,
        versions=versions,
    )


def run_pipeline(config: RunConfig) -> RunResult:
    """Distil static vectors as ``config`` says, write them under ``config.out``, return them."""
    started, timings = time.perf_counter(), Timings()
    plan = plan_run(config)
    # the options as given: a run the local engine began (pieces by default) goes on with Ray (none)
    with open_run(plan.out, config, plan.corpus, package_versions().get("distill", "dev")) as opened:
        plan = dataclasses.replace(plan, out=opened.out, corpus=opened.corpus)
        config, work = plan.config, opened.work  # with its defaults resolved
        with timings("load_model"):
            encoder = load_model(plan)
        lowercase = encoder.uncased if config.lowercase is None else config.lowercase
        with timings("vocabulary"):
            vocab, stats = count_vocabulary(plan, lowercase, work, opened.reused)
            sample = plan_sample(
                vocab.counts, config.max_occurrences, config.seed, draw=config.sampling.value == "uniform"
            )
        logger.info("vocabulary: %d words, %d occurrences to encode", len(vocab), sample.n_rows)
        intra = IntraSentence(plan.layers) if config.analyze else None
        pieces = PieceSums(plan.layers, encoder.vocab_size or 0, encoder.hidden_size) if config.pieces else None
        teacher = TeacherTargets(encoder.n_layers, teacher_pooling(plan.source)) if config.teacher else None
        encoded = encode_pass(encoder, _lines(plan, None, None), vocab, sample, plan.layers, config, work,
                              resume=opened.reused, corpus_lines=stats.lines,
                              observers=[o for o in (intra, pieces, teacher) if o is not None])  # fmt: skip
        encoded.store.close()
        check_unknown(encoded.encode, plan.source)
        timings.update(encode=encoded.encode.seconds, forward=encoded.encode.forward_seconds)
        with timings("reduce_and_write"):
            reduced = reduce_and_write(plan, encoder, encoded, vocab, sample)
            best = write_best(plan, encoder, reduced) if plan.best is not None else None
            if pieces is not None:
                reduced.files += [p.name for p in pieces.write(plan.out)]
            if teacher is not None:
                reduced.files.append(teacher.write(plan.out).name)
        manifest = build_manifest(plan, encoder, vocab, stats, sample, encoded, reduced, lowercase)
        if config.analyze:
            with timings("analysis"):
                seconds = time.perf_counter() - started
                manifest.analysis = analyze(plan, encoder, encoded, vocab, sample, intra, stats, reduced, seconds)
        timings["total"] = time.perf_counter() - started
        manifest.timings_seconds = {k: round(v, 3) for k, v in timings.items()}
        if best is not None:
            manifest.best, manifest.derived = best[0], {best[0]: best[1]}
        RunDir(plan.out).write_manifest(manifest.to_json())
        opened.finished = True
        return RunResult(out=plan.out, vectors=reduced.vectors, manifest=manifest.to_json())


def summary(result: RunResult) -> str:
    """A few lines for the terminal."""
    m = result.manifest
    dropped = ", ".join(f"{n} {why}" for why, n in m["vocabulary"]["dropped"].items()) or "none"
    lines = [
        f"model {m['model']['source']} layers {m['layers']} pooling {m['pooling']}",
        f"vocabulary {m['vocabulary']['size']:,} words (dropped: {dropped})",
        f"encoded {m['occurrences']['encoded']:,} occurrences in {m['encoding']['sentences']:,} sentences, "
        f"{m['encoding']['tokens']:,} tokens at {m['encoding']['tokens_per_second']:,.0f} tokens/s",
        f"wrote {len(m['files'])} files to {result.out} in {m['timings_seconds']['total']:.1f} s",
    ]
    if m.get("best"):
        paper = "; the paper's: layer1.pc.txt" if "layer1.pc.txt" in m["files"] else ""
        lines.append(f"recommended set (--best): {result.out}/{m['best']}.txt{paper}")
    return "\n".join(lines)


__all__ = ["RunResult", "load", "run_pipeline", "summary"]
