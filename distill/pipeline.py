"""The whole chain, step by step: resolve the options against the model (:mod:`distill.plan`) -> claim the output
folder (:func:`distill.workdir.open_run`) -> load the encoder -> count the corpus and build the vocabulary ->
sample occurrences -> encode them (checkpointed) -> reduce each word's occurrences to one vector per layer and
pooling and write the sets asked for and the recommended one (:mod:`distill.sets`) -> measure contextuality
(``--analyze``) and write the manifest, last (:mod:`distill.record`).

Only this module and :mod:`distill.cli` know the whole chain.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from distill.analysis.measures import IntraSentence
from distill.config import Engine, Pooling, RunConfig
from distill.corpus import (
    CorpusStats,
    Vocabulary,
    build_vocabulary,
    count_words,
    iter_lines,
    read_small_text,
    read_word_list,
)
from distill.encoders import Encoder
from distill.encoding.alone import read_texts
from distill.encoding.driver import encode_pass
from distill.encoding.workers import given_or_own_pool
from distill.lexicon import BAG_WORDS, frequent_words, nearest_words, word_bags
from distill.names import set_name
from distill.occurrences import plan_sample
from distill.parallel import Mapper
from distill.plan import Plan, load_model, package_versions, plan_run
from distill.progress import track
from distill.record import Timings, write_record
from distill.rundir import RunDir, listed_files, load
from distill.serve.pieces import PieceSums
from distill.sets import Encoded, write_sets
from distill.tune.teacher import TeacherTargets, teacher_pooling
from distill.workdir import WorkDir, open_run

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class RunResult:
    """Vectors of a run, keyed by set name (``"layer1.pc"``, ``"layers4-6.mean"``) as the files are named."""

    out: Path
    vectors: Mapping[str, Any]  # gensim KeyedVectors
    manifest: dict[str, Any]
    reused: bool = False  # a finished run found up to date, not run again

    def __getitem__(self, key: int | str | tuple[int, str]) -> Any:
        """``result[1]``: layer 1, first pooling; ``result[1, "mean"]``: layer 1, mean pooling;
        ``result["best"]`` or a set's name (``result["layers4-6.mean"]``)."""
        if isinstance(key, str):
            return self.vectors[self.manifest["best"] if key == "best" else key]
        layer, pooling = key if isinstance(key, tuple) else (key, self.manifest["config"]["pooling"][0])
        return self.vectors[set_name(layer, Pooling(pooling))]


def count_vocabulary(
    plan: Plan, lowercase: bool, work: WorkDir, reused: bool, mapper: Mapper | None = None
) -> tuple[Vocabulary, CorpusStats]:
    """The vocabulary, counted from the corpus (or read back from a checkpoint); blocks of lines counted by
    ``mapper`` (a worker pool's) when given."""
    counted = work.load_vocabulary() if reused else None
    if counted is not None:
        logger.info("resuming: vocabulary of %d words from %s", len(counted[0]), work.path)
        return counted
    config, stats = plan.config, CorpusStats()
    word_list = read_word_list(config.vocab_file, lowercase) if config.vocab_file else None
    lines = iter_lines(plan.corpus, config.encoding_errors, stats, config.split_sentences, listed_files, plan.given)
    vocab = build_vocabulary(
        count_words(track(lines, "counting", "lines", disable=not config.progress), lowercase, stats, mapper),
        lowercase=lowercase, min_count=config.min_count, max_size=config.max_vocab, alpha_only=config.alpha_only,
        word_list=word_list,
    )  # fmt: skip
    work.save_vocabulary(vocab, stats)
    return vocab, stats


def draw_bags(config: RunConfig, encoder: Encoder, teacher: TeacherTargets, work: WorkDir) -> list[str]:
    """``--teacher-bags``; with ``--bag-topics``, on topics given by the teacher's reading of each of the bags'
    words alone (its blocks kept in the work folder, as the bags' are)."""
    near = None
    if config.bag_topics:
        words, reader = frequent_words(BAG_WORDS), teacher.empty()
        read_texts(encoder, words, [reader], config.batch_size, config.progress, "reading the bags' words", work.texts)
        near = nearest_words(reader.embeddings())
    return word_bags(config.teacher_bags, config.seed, top=BAG_WORDS, near=near, share=config.bag_topics)


def read_apart(config: RunConfig, encoder: Encoder, teacher: TeacherTargets, work: WorkDir, texts: list[str]) -> None:
    """Show the teacher ``texts`` (``--teacher-texts``), then the bags of ``--teacher-bags``, each read alone."""
    bags = draw_bags(config, encoder, teacher, work) if config.teacher_bags else []
    desc = "reading " + " and ".join(what for what, given in (("texts", texts), ("word bags", bags)) if given)
    read_texts(encoder, texts + bags, [teacher], config.batch_size, config.progress, desc, work.texts)


def host_workers(config: RunConfig) -> int | None:
    """The run's worker processes (None: the device's default); none with Ray, whose actors tokenize."""
    return 0 if config.engine is Engine.RAY else config.tokenize_workers


def run_pipeline(config: RunConfig) -> RunResult:
    """Distil static vectors as ``config`` says, write them under ``config.out``, return them (with
    ``--tune-blend``, the recommended set tuned toward the teacher). A finished run in ``out`` that these options
    would make again, proven by content (:func:`finished_as_asked`), is returned as it is, unless ``--restart``."""
    blend = config.tune_blend
    return run_pipeline_then(
        config, lambda result: result if blend is None else tune_best(result, blend, config), reuse=lambda r: r
    )


def reused_run(out: Path, manifest: dict[str, Any]) -> RunResult:
    """The finished run in ``out`` found up to date, its sets read when asked for."""
    logger.info("%s is up to date: a finished run of these options, model and corpus, its files as written", out)
    return RunResult(out=out, vectors=RunDir(out).sets(), manifest=manifest, reused=True)


def tune_best(result: RunResult, blend: float, config: RunConfig) -> RunResult:
    """``distill tune --set best --blend B --recommend`` on a run just written: the tuned set is recommended; a
    tuning stopped part way goes on from its checkpoint in the work folder, which the run keeps until then."""
    from distill.tune.options import TuneOptions
    from distill.tune.train import tune_run

    options = TuneOptions(blend=blend, seed=config.seed)
    name, kv, _ = tune_run(
        result.out,
        "best",
        options=options,
        progress=config.progress,
        recommend=True,
        device=config.device,
        checkpoint=WorkDir(result.out).tuning,
    )
    return RunResult(out=result.out, vectors={**result.vectors, name: kv}, manifest=RunDir(result.out).manifest())


def run_pipeline_then(
    config: RunConfig,
    step: Callable[[RunResult], T],
    check: Callable[[Plan], None] | None = None,
    reuse: Callable[[RunResult], T] | None = None,
) -> T:
    """:func:`run_pipeline`, then ``step`` on its result before the run counts as finished: under the run's
    lock, with the work folder kept, so that if ``step`` fails or is interrupted the same command goes on
    from the finished encoding (``distill model``'s tuning and export). ``check``: the step's own checks
    against the plan (the model's size), before anything is written. ``reuse``: what to return, under the lock,
    of a finished run found up to date (:func:`finished_as_asked`; unless ``--restart``), instead of running
    again; None: always run."""
    timings = Timings()
    with timings("plan"):  # the model's config read (transformers imported) and every option checked
        plan = plan_run(config)
        if check is not None:
            check(plan)
        texts = read_small_text(config.teacher_texts, "--teacher-texts file") if config.teacher_texts else []
    # the options as given: a run the local engine began (pieces by default) goes on with Ray (none)
    versions, resolved = package_versions(), None if reuse is None else plan.config
    with contextlib.ExitStack() as stack:
        with timings("claim"):  # the lock, the fingerprint (the model's and corpus's digests), a checkpoint's check
            opened = stack.enter_context(open_run(plan.out, config, plan.corpus, versions, resolved))
        if opened.done is not None and reuse is not None:
            return reuse(reused_run(opened.out, opened.done))
        workers = stack.enter_context(contextlib.ExitStack())
        given = {copy: path for path, copy in zip(plan.corpus, opened.corpus) if copy != path}  # stdin, FIFOs
        plan = dataclasses.replace(plan, out=opened.out, corpus=opened.corpus, model_files=tuple(opened.model),
                                   given=given)  # fmt: skip
        config, work = plan.config, opened.work  # with its defaults resolved
        with timings("load_model"):
            encoder = load_model(plan)
        # a GPU run's host work (counting, finding the sampled sentences, tokenizing) in worker processes
        pool = workers.enter_context(given_or_own_pool(None, host_workers(config), encoder.device.type))
        lowercase = encoder.uncased if config.lowercase is None else config.lowercase
        with timings("vocabulary"):
            vocab, stats = count_vocabulary(plan, lowercase, work, opened.reused, pool.map if pool else None)
            sample = plan_sample(
                vocab.counts, config.max_occurrences, config.seed, draw=config.sampling.value == "uniform"
            )
        logger.info("vocabulary: %d words, %d occurrences to encode", len(vocab), sample.n_rows)
        lines = iter_lines(plan.corpus, config.encoding_errors, None, config.split_sentences, listed_files, plan.given)
        intra = IntraSentence(plan.layers) if config.analyze else None
        pieces = PieceSums(plan.layers, encoder.vocab_size or 0, encoder.hidden_size) if config.pieces else None
        teacher = TeacherTargets(encoder.n_layers, teacher_pooling(plan.source), len(texts)) if config.teacher else None
        encoded = encode_pass(encoder, lines, vocab, sample, plan.layers, config, work,
                              resume=opened.reused, corpus_lines=stats.lines,
                              observers=[o for o in (intra, pieces, teacher) if o is not None], pool=pool)  # fmt: skip
        with timings("close"):  # the pool's processes joined, the store's last writes
            workers.close()
            encoded.store.close()
        opened.encoded = True
        if teacher is not None and (texts or config.teacher_bags):  # after the pass: a resumed run reads the
            with timings("teacher_bags"):  # blocks it lacks
                read_apart(config, encoder, teacher, work, texts)
        timings.update(encode=encoded.encode.seconds, forward=encoded.encode.forward_seconds)
        run = Encoded(encoder, vocab, stats, sample, encoded)
        with timings("reduce_and_write"):
            reduced = write_sets(plan, run, [o for o in (pieces, teacher) if o is not None], work.alone)
        manifest = write_record(plan, run, reduced, intra, timings).to_json()
        stepped = step(RunResult(out=plan.out, vectors=reduced.vectors, manifest=manifest))
        opened.finished = True
        return stepped


def summary(result: RunResult) -> str:
    """A few lines for the terminal."""
    m = result.manifest
    dropped = ", ".join(f"{n} {why}" for why, n in m["vocabulary"]["dropped"].items()) or "none"
    lines = [
        f"model {m['model']['source']} layers {m['layers']} pooling {m['pooling']}",
        f"vocabulary {m['vocabulary']['size']:,} words (dropped: {dropped})",
        f"encoded {m['occurrences']['encoded']:,} occurrences in {m['encoding']['sentences']:,} sentences, "
        f"{m['encoding']['tokens']:,} tokens at {m['encoding']['tokens_per_second']:,.0f} tokens/s",
        (
            f"up to date (--restart distils again): {len(m['files'])} files in {result.out}, written"
            if result.reused
            else f"wrote {len(m['files'])} files to {result.out}"
        )
        + f" in {m['timings_seconds']['total']:.1f} s",
    ]
    if m.get("best"):
        paper = "; the paper's: layer1.pc.txt" if "layer1.pc.txt" in m["files"] else ""
        tuned = m.get("derived", {}).get(m["best"], {})
        how = (
            f"--best, tuned toward the teacher at blend {tuned['options']['blend']}"
            if "tuned_from" in tuned
            else "--best"
        )
        lines.append(f"recommended set ({how}): {result.out}/{m['best']}.txt{paper}")
    return "\n".join(lines)


__all__ = ["RunResult", "load", "run_pipeline", "run_pipeline_then", "summary", "tune_best"]
