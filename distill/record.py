"""A finished run's record: the manifest (what was run, on what, with which options, what came out) and,
with ``--analyze``, the contextuality measures; written last, so a folder with a manifest is a finished run."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distill.analysis.measures import IntraSentence, analyze_layers
from distill.analysis.report import write_analysis
from distill.encoders import Encoder
from distill.encoding.driver import store_kind
from distill.plan import Plan, package_versions
from distill.rundir import RunDir
from distill.sets import Encoded, Reduced


class Timings(dict[str, float]):
    """Seconds per step of a run, from ``started``."""

    def __init__(self) -> None:
        super().__init__()
        self.started = time.perf_counter()

    @contextmanager
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


def analyze(plan: Plan, run: Encoded, intra: IntraSentence | None, reduced: Reduced, seconds: float) -> dict[str, Any]:
    """``--analyze``: contextuality measures from the occurrences in the store; writes their files."""
    encoder, encoded, vocab, sample, stats = run.encoder, run.encoded, run.vocab, run.sample, run.stats
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
        "files": list(plan.model_files),  # a local model's sizes and digests: what a finished run is reused by
    }


def write_record(plan: Plan, run: Encoded, reduced: Reduced, intra: IntraSentence | None, timings: Timings) -> Manifest:
    """The run's record, written last: ``--analyze``'s measures and files, then ``manifest.json``."""
    manifest = build_manifest(plan, run, reduced)
    if plan.config.analyze:
        with timings("analysis"):
            seconds = time.perf_counter() - timings.started
            manifest.analysis = analyze(plan, run, intra, reduced, seconds)
    timings["total"] = time.perf_counter() - timings.started
    manifest.timings_seconds = {k: round(v, 3) for k, v in timings.items()}
    if reduced.best is not None:
        manifest.best, manifest.derived = reduced.best[0], {reduced.best[0]: reduced.best[1]}
    RunDir(plan.out).write_manifest(manifest.to_json())
    return manifest


def build_manifest(plan: Plan, run: Encoded, reduced: Reduced) -> Manifest:
    """The manifest of a finished run (timings and analysis are filled in by :func:`write_record`)."""
    encoder, vocab, stats, sample, encoded = run.encoder, run.vocab, run.stats, run.sample, run.encoded
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
                "batch_tokens": encoded.batch_tokens}  # fmt: skip
    options = config.to_json()
    options["corpus"] = [plan.given.get(path, path) for path in plan.corpus]  # as given: not a copy since removed
    return Manifest(
        distill_version=versions.get("distill", "dev"),
        model=_model_record(plan, encoder),
        layers=list(plan.layers),
        pooling=[p.value for p in dict.fromkeys(p for _, p in plan.reduced)],
        corpus=corpus_record,
        vocabulary={
            "size": len(reduced.words),
            "lowercase": vocab.lowercase,
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
