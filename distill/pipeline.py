"""The whole chain: corpus -> vocabulary -> sampled occurrences -> encoder -> reduction -> files."""

from __future__ import annotations

import dataclasses
import logging
import platform
import re
import shutil
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from distill.analysis import IntraSentence, analyze_layers
from distill.analysis_report import write_analysis
from distill.checkpoint import WorkDir, fingerprint
from distill.config import (
    ConfigError,
    Pooling,
    RunConfig,
    best_layers,
    default_corpus,
    default_gguf,
    parse_layers,
    resolve_model,
)
from distill.corpus import CorpusStats, build_vocabulary, count_words, iter_lines, read_word_list
from distill.derive import Recipe, derive
from distill.encode_pass import encode_pass
from distill.encoder import load_model, load_model_config
from distill.export import (
    check_writable,
    load,
    read_manifest,
    to_keyed_vectors,
    write_faiss,
    write_json,
    write_vocab,
    write_word2vec,
)
from distill.occurrences import plan_sample
from distill.pieces import PieceSums
from distill.reduction import reduce_words

logger = logging.getLogger(__name__)

_PACKAGES = ("distill", "torch", "transformers", "tokenizers", "numpy", "gensim", "faiss-cpu", "scikit-learn")


@dataclass
class RunResult:
    """Vectors of a run, keyed ``"layer{L}.{pooling}"`` as the files are named."""

    out: Path
    vectors: dict[str, Any]  # gensim KeyedVectors
    manifest: dict[str, Any]

    def __getitem__(self, key: int | str | tuple[int, str]) -> Any:
        """``result[1]``: layer 1, first pooling; ``result[1, "mean"]``: layer 1, mean pooling;
        ``result["best"]`` or a set's name (``result["layers4-6.mean"]``)."""
        if isinstance(key, str):
            return self.vectors[self.manifest["best"] if key == "best" else key]
        layer, pooling = key if isinstance(key, tuple) else (key, self.manifest["config"]["pooling"][0])
        return self.vectors[stem(layer, Pooling(pooling))]


def stem(layer: int, pooling: Pooling) -> str:
    return f"layer{layer}.{pooling.value}"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.").lower() or "run"


def default_out(model: str, corpus: tuple[str, ...]) -> Path:
    """``outputs/<model>-<corpus>``, e.g. ``outputs/minilm-sts``."""
    model_part = slug(Path(model.rstrip("/")).name)
    first = corpus[0] if corpus else str(default_corpus())
    corpus_part = "stdin" if first == "-" else slug(re.sub(r"(\.txt)?(\.gz)?$", "", Path(first).name))
    corpus_part = re.sub(r"^sts_.*sentences$", "sts", corpus_part)
    return Path("outputs") / f"{model_part}-{corpus_part}"


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def _spool_stdin(directory: Path) -> str:
    """stdin is read twice (count, then encode): keep a copy for the run."""
    path = directory / "stdin.txt"
    with open(path, "wb") as handle:
        shutil.copyfileobj(sys.stdin.buffer, handle)
    return str(path)


def run_pipeline(config: RunConfig) -> RunResult:
    """Distil static vectors as ``config`` says, write them under ``config.out``, return them."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    source = resolve_model(config.model)
    out = check_writable(config.out or default_out(config.model, config.corpus))
    corpus = config.corpus or (str(default_corpus()),)
    if not config.corpus and not Path(corpus[0]).is_file():
        raise ConfigError(f"the default corpus {corpus[0]} is missing; set DISTILL_DATA or pass --corpus FILE")
    gguf_file = config.gguf_file or default_gguf(config.model)
    model_config = load_model_config(config.model, source, config.revision, gguf_file)
    layers = parse_layers(config.layers, int(model_config.num_hidden_layers))
    if config.best:  # the recommended set needs the upper layers' mean vectors
        layers = tuple(sorted(set(layers) | set(best_layers(int(model_config.num_hidden_layers)))))
        if Pooling.MEAN not in config.pooling:
            config = dataclasses.replace(config, pooling=(*config.pooling, Pooling.MEAN))

    resumable = config.resume and "-" not in corpus  # stdin cannot be read again
    work = WorkDir(out)
    reused = work.open(fingerprint(config, corpus, package_versions().get("distill", "dev")) if resumable else None)
    finished = False
    try:
        if "-" in corpus:
            corpus = tuple(_spool_stdin(work.path) if c == "-" else c for c in corpus)
        t0 = time.perf_counter()
        model = load_model(
            config.model,
            source,
            layers,
            device=config.device,
            dtype=config.dtype,
            max_length=config.max_length,
            revision=config.revision,
            gguf_file=gguf_file,
            config=model_config,
        )
        timings["load_model"] = time.perf_counter() - t0
        lowercase = model.uncased if config.lowercase is None else config.lowercase
        logger.info(
            "model %s: %d layers, hidden %d, %s on %s",
            source,
            model.n_layers,
            model.hidden_size,
            str(model.dtype).removeprefix("torch."),
            model.device,
        )

        t0 = time.perf_counter()
        counted = work.load_vocabulary() if reused else None
        if counted is not None:
            vocab, stats = counted
            logger.info("resuming: vocabulary of %d words from %s", len(vocab), work.path)
        else:
            stats = CorpusStats()
            counts = count_words(_lines(corpus, config, "counting", stats), lowercase, stats)
            word_list = read_word_list(config.vocab_file, lowercase) if config.vocab_file else None
            vocab = build_vocabulary(
                counts,
                lowercase=lowercase,
                min_count=config.min_count,
                max_size=config.max_vocab,
                alpha_only=config.alpha_only,
                word_list=word_list,
            )
            work.save_vocabulary(vocab, stats)
        plan = plan_sample(vocab.counts, config.max_occurrences, config.seed, draw=config.sampling == "uniform")
        timings["vocabulary"] = time.perf_counter() - t0
        logger.info("vocabulary: %d words, %d occurrences to encode", len(vocab), plan.n_rows)

        intra = IntraSentence(layers) if config.analyze else None
        pieces = PieceSums(layers, model.vocab_size, model.hidden_size) if config.pieces else None
        encoded = encode_pass(
            model,
            _lines(corpus, config, None, None),
            vocab,
            plan,
            layers,
            config,
            work,
            resume=reused,
            corpus_lines=stats.lines,
            observers=[o for o in (intra, pieces) if o is not None],
        )
        store, encode = encoded.store, encoded.encode
        store.close()
        timings["encode"] = encode.seconds
        timings["forward"] = encode.forward_seconds

        t0 = time.perf_counter()
        filled = store.filled_per_word(plan.offsets)
        keep = filled > 0
        if not keep.any():
            raise ConfigError("no occurrence of any vocabulary word could be aligned to the model's pieces")
        dropped = dict(vocab.dropped)
        if (~keep).any():
            dropped["no alignable occurrence"] = int((~keep).sum())
        words = [w for w, k in zip(vocab.words, keep) if k]
        vectors: dict[str, Any] = {}
        files: list[str] = ["vocab.tsv"]
        writer = ThreadPoolExecutor(max_workers=1)  # layer L is written while layer L+1 is reduced
        pending: list[Future[Any]] = [writer.submit(write_vocab, words, vocab.counts[keep], out / "vocab.tsv")]
        for layer in layers:
            occurrences = store.layer(layer)
            for pooling in config.pooling:
                matrix = reduce_words(
                    occurrences,
                    plan.offsets,
                    filled,
                    pooling,
                    position=store.position,
                    device=model.device,
                    normalize=config.normalize,
                    progress=config.progress,
                    desc=f"{stem(layer, pooling)}",
                )[keep]
                name = stem(layer, pooling)
                kv = to_keyed_vectors(words, matrix, vocab.counts[keep])
                pending += [
                    writer.submit(write_word2vec, kv, out / f"{name}.txt", binary=False),
                    writer.submit(write_word2vec, kv, out / f"{name}.bin", binary=True),
                    writer.submit(write_faiss, words, matrix, out / f"{name}.faiss"),
                ]
                files += [f"{name}.txt", f"{name}.bin", f"{name}.faiss", f"{name}.faiss.words.txt"]
                vectors[name] = kv
        try:
            for future in pending:
                future.result()  # raises the first write error (disk full ...) here
        finally:
            writer.shutdown(cancel_futures=True)
        if pieces is not None:
            files += [p.name for p in pieces.write(out)]
        timings["reduce_and_write"] = time.perf_counter() - t0
        analysis_summary = None
        if config.analyze:
            t0 = time.perf_counter()
            analysis = analyze_layers(
                store.matrices,
                plan.offsets,
                filled,
                vocab.words,
                position=store.position,
                intra=intra,
                seed=config.seed,
                device=model.device,
            )
            timings["analysis"] = time.perf_counter() - t0
            analysis.update(
                model=config.model,
                corpus=", ".join(Path(f["path"]).name for f in stats.files),
                label=f"{Path(config.model.rstrip('/')).name}",
                seconds=timings["analysis"],
                distill_seconds=time.perf_counter() - started - timings["analysis"],
            )
            files += [p.name for p in write_analysis(analysis, out)]
            analysis_summary = {k: analysis[k] for k in ("words_measured", "sentences_measured", "seconds")}
        timings["total"] = time.perf_counter() - started

        manifest = {
            "distill_version": package_versions().get("distill", "dev"),
            "model": {
                "name": config.model,
                "source": source,
                "revision": model.revision,
                "gguf_file": gguf_file,
                "n_layers": model.n_layers,
                "hidden_size": model.hidden_size,
                "uncased": model.uncased,
                "max_length": model.max_length,
                "device": str(model.device),
                "dtype": str(model.dtype).removeprefix("torch."),
                "layers_run": model.layers_run,
            },
            "layers": list(layers),
            "pooling": [p.value for p in config.pooling],
            "corpus": {
                "files": stats.files,
                "lines": stats.lines,
                "empty_lines": stats.empty_lines,
                "lines_with_replaced_bytes": stats.replaced_lines,
                "words": stats.words,
            },
            "vocabulary": {
                "size": len(words),
                "lowercase": lowercase,
                "candidates": len(vocab),
                "dropped": dropped,
            },
            "occurrences": {
                "planned": plan.n_rows,
                "encoded": encode.occurrences,
                "not_aligned": encode.not_aligned,
                "per_word_max": config.max_occurrences,
                "per_word_mean": float(filled[keep].mean()),
                "sampling": encoded.sampling,
                "store_dtype": store.dtype.name,
                "store": "memory" if store.in_memory else "disk",
            },
            "encoding": {
                "sentences": encode.sentences,
                "windows": encode.windows,
                "long_sentences": encode.long_sentences,
                "tokens": encode.tokens,
                "tokens_per_second": encode.tokens / max(encode.seconds, 1e-9),
            },
            "files": files,
            "resumed_from_chunk": encoded.resumed_chunks or None,
            "analysis": analysis_summary,
            "timings_seconds": {k: round(v, 3) for k, v in timings.items()},
            "config": config.to_json(),
            "versions": package_versions(),
        }
        if not config.corpus:
            manifest["config"]["corpus"] = list(corpus)
        write_json(manifest, out / "manifest.json")
        if config.best:
            best = best_layers(int(model_config.num_hidden_layers))
            name, kv = derive(out, Recipe(layers=f"{best[0]}-{best[-1]}", pooling="mean", combine="mean"))
            vectors[name] = kv
            manifest = read_manifest(out)
            manifest["best"] = name
            write_json(manifest, out / "manifest.json")
        finished = True
        return RunResult(out=out, vectors=vectors, manifest=manifest)
    except ConfigError:
        finished = True  # bad input: nothing worth resuming
        raise
    except KeyboardInterrupt:
        if resumable:
            logger.warning("interrupted: run the same command again to go on from the last checkpoint")
        raise
    finally:
        work.close(remove=finished or not resumable)


def _lines(corpus: tuple[str, ...], config: RunConfig, desc: str | None, stats: CorpusStats | None) -> Any:
    lines = iter_lines(corpus, config.encoding_errors, stats)
    if desc is None or not config.progress:
        return lines
    from tqdm.auto import tqdm

    return tqdm(lines, desc=desc, unit=" lines", dynamic_ncols=True)


def run(**options: Any) -> RunResult:
    """Python API mirroring ``distill run``: ``distill.run(model="minilm", layers="1,2", corpus=[...])``."""
    if isinstance(options.get("corpus"), (str, Path)):
        options["corpus"] = (options["corpus"],)
    if isinstance(options.get("pooling"), str):
        options["pooling"] = tuple(options["pooling"].split(","))
    if "layers" in options and not isinstance(options["layers"], str):
        layers = options["layers"]
        options["layers"] = ",".join(str(x) for x in ([layers] if isinstance(layers, int) else layers))
    if options.get("out") is not None:
        options["out"] = str(options["out"])
    known = {f.name for f in dataclasses.fields(RunConfig)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return run_pipeline(RunConfig(**options))


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
        lines.append(f"recommended set (--best): {result.out}/{m['best']}.txt; the paper's: layer1.pc.txt")
    return "\n".join(lines)


__all__ = ["RunResult", "load", "run", "run_pipeline", "summary"]
