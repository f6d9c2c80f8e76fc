"""A run's work folder, ``<out>/.distill-work``: what a killed run needs to go on where it stopped, and the
copies of inputs that can be read only once.

It holds the fingerprint of the run (options, corpus files' sizes and contents' digests, distill's version),
the vocabulary once counted, the occurrence store's files and ``checkpoint.npz``, written
atomically at chunk boundaries every ``--checkpoint-every`` seconds: rows filled so far, sentence
chunks done, the encoder's counts and the observers' sums. The same command run again finds the
fingerprint unchanged and goes on from the checkpoint; since chunks are encoded exactly as they
would have been, the vectors equal those of an uninterrupted run. A changed option or corpus
starts afresh. The folder is removed when the run succeeds.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import Effect, RunConfig
from distill.corpus import CorpusStats, Vocabulary, expand_corpus, streamed
from distill.errors import ConfigError, OutputError
from distill.files import listed_contents, member, sha256_file, subfolder, write_json
from distill.names import (
    ALONE_DIR,
    CHECKPOINT,
    CHECKPOINT_PART,
    CHUNKS_DIR,
    COUNTED_WORDS,
    COUNTS,
    FINGERPRINT,
    OCCURRENCES_DIR,
    STDIN_COPY,
    TEXTS_DIR,
    TUNING,
    WORK_DIR,
    input_copy,
)
from distill.paths import model_contents
from distill.rundir import RunDir, listed_files

logger = logging.getLogger(__name__)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; the message says whether the same command goes on from a checkpoint."""


def fingerprint(
    config: RunConfig, corpus: tuple[str, ...], version: str, model: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """What must be unchanged for a checkpoint to be reused (``model``: the model's :func:`model_contents`,
    found here when not given)."""
    if model is None:
        model = model_contents(config.model, config.gguf_file)
    # contents, not modification times: a corpus copied or unpacked afresh (same bytes, new times) keeps
    # its checkpoint; hashing reads the corpus once more, far less than the counting pass that follows
    files = [
        {"path": os.path.abspath(path), "size": os.path.getsize(path), "sha256": sha256_file(path)}
        for path in expand_corpus(corpus, listed_files)
    ]
    # a run killed on the local engine can go on with Ray and the other way round: options that change
    # only how a run is watched, saved or spread do not count, nor the tuning that follows the sets
    return {"options": config.without(Effect.NONE, Effect.AFTER), "corpus": files, "model": model, "distill": version}


def finished_as_asked(
    out: Path,
    config: RunConfig,
    corpus: tuple[str, ...],
    versions: dict[str, str],
    *ignored: Effect,
    model: list[dict[str, Any]] | None = None,
    corpus_sha256: list[str] | None = None,
) -> dict[str, Any] | None:
    """The manifest of the finished run in ``out`` when it is what ``config`` would make again: the same options
    (but those whose change has one of ``ignored``), the same local model and ``corpus`` by content, the same
    ``versions`` of distill and the libraries, and every file it lists as it was written (by content); else None.
    ``model``: the model's :func:`model_contents` and ``corpus_sha256`` the corpus files' digests, found here when
    not given. A hub model's files are not known until it is loaded, and a stream cannot be read twice: never
    reused. The cheap tests come first; the run's own files, the most bytes, are hashed last."""
    run = RunDir(out)
    manifest = run.finished_manifest()
    model = model_contents(config.model, config.gguf_file) if model is None else model
    if manifest is None or not model or manifest["model"].get("files") != model or any(map(streamed, corpus)):
        return None  # an unfinished or running run's folder, or another model; a hub model; stdin
    defaults, keep = RunConfig().to_json(), lambda key: key not in ("corpus", "out")  # inputs: compared by content
    saved = {k: v for k, v in manifest["config"].items() if keep(k)}
    wanted = {k: v for k, v in config.without(*ignored).items() if keep(k)}
    if manifest.get("versions") != versions or any(saved.get(k, defaults.get(k)) != v for k, v in wanted.items()):
        return None
    if corpus_sha256 is None:
        corpus_sha256 = [sha256_file(path) for path in expand_corpus(corpus, listed_files)]
    if [f.get("sha256") for f in manifest["corpus"]["files"]] != corpus_sha256:
        return None
    return manifest if run.intact(manifest) and not (out / WORK_DIR).exists() else None


@dataclass
class OpenRun:
    """A run folder claimed for one run: its work folder, whether a checkpoint there is reused, the corpus
    to read (inputs that can be read only once copied in), the model's files as the run found them
    (:func:`model_contents`), whether the run has ``encoded`` (bad input found after that keeps the work folder:
    the encoding is worth resuming) and whether it ``finished``."""

    out: Path
    work: WorkDir
    reused: bool
    corpus: tuple[str, ...]
    model: list[dict[str, Any]]
    encoded: bool = False
    finished: bool = False
    done: dict[str, Any] | None = None  # the manifest of a finished run found up to date: nothing cleared


@contextlib.contextmanager
def open_run(
    out: Path, config: RunConfig, corpus: tuple[str, ...], versions: dict[str, str], resolved: RunConfig | None = None
) -> Iterator[OpenRun]:
    """Claim ``out`` for one run (its lock, held to the end), open its work folder (reused when the
    fingerprint of ``config`` as given, ``corpus`` and distill's version in ``versions`` is unchanged), clear the
    previous run's files; unless the finished run there is what the ``resolved`` options would make again
    (:func:`finished_as_asked`: ``done``), which is left as it is (``resolved`` None: never). On leaving: the work
    folder goes once the run finished (or could never resume, or was up to date), a folder made for a run refused
    for bad input goes, and Ctrl-C says whether the same command goes on."""
    created = not out.exists()
    unfinished = (out / WORK_DIR).is_dir()  # a killed run's: the files it wrote before its manifest are its own
    can_resume = config.resume and not any(map(streamed, corpus))  # stdin or a FIFO cannot be read again
    run = RunDir(out)
    lock = run.claim()
    try:
        work = WorkDir(run.path)  # never a link
    except BaseException:
        lock.release()
        raise
    opened, failed = OpenRun(run.path, work, False, corpus, []), False
    try:
        # fingerprinted once the folder is claimed: a second writer is refused before the model and corpus are
        # hashed; the model's digests also go into the manifest, what a finished run is reused by
        opened.model = model_contents(config.model, config.gguf_file)
        print_ = fingerprint(config, corpus, versions.get("distill", "dev"), opened.model) if can_resume else None
        if resolved is not None and print_ is not None and not unfinished:  # the corpus hashed once, for both
            hashed = [f["sha256"] for f in print_["corpus"]]
            opened.done = finished_as_asked(out, resolved, corpus, versions, Effect.NONE, model=opened.model,
                                            corpus_sha256=hashed)  # fmt: skip
        if opened.done is None:
            opened.reused, opened.corpus = work.open(print_, corpus)
            run.clear_previous(unfinished)  # under the lock: a finished folder never mixes two runs
        yield opened
    except ConfigError:
        failed = True
        opened.finished = not opened.encoded  # bad input before the encoding finished: nothing to resume
        raise
    except KeyboardInterrupt as err:
        how = "run the same command again to go on from the last checkpoint (--restart starts afresh)"
        raise RunInterrupted(f"interrupted; {how if can_resume else 'stdin cannot be read again'}") from err
    finally:
        work.close(remove=opened.finished or not can_resume or opened.done is not None)
        lock.release()
        if created and failed:
            with contextlib.suppress(OSError):  # a folder this run made and left empty is not left behind
                run.path.rmdir()


class WorkDir:
    """The work folder of one output folder (whose run holds the folder's lock: :meth:`RunDir.claim`)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = member(out, WORK_DIR)  # never a link

    @property
    def occurrences(self) -> Path:
        """The occurrence store's folder."""
        return self.path / OCCURRENCES_DIR

    @property
    def chunks(self) -> Path:
        """The Ray engine's chunk files."""
        return self.path / CHUNKS_DIR

    @property
    def alone(self) -> Path:
        """The words read alone so far, a block a file (made on first use): a resumed run reads only the blocks
        it lacks."""
        path = subfolder(self.path, ALONE_DIR)
        path.mkdir(exist_ok=True)
        return path

    @property
    def texts(self) -> Path:
        """The teacher's readings of the bags of words so far, a block a file (made on first use): a resumed run
        reads only the blocks it lacks."""
        path = subfolder(self.path, TEXTS_DIR)
        path.mkdir(exist_ok=True)
        return path

    @property
    def tuning(self) -> Path:
        """The checkpoint of the tuning that follows the sets (``distill model``, ``--tune-blend``): a tuning
        stopped part way goes on from its last epoch saved."""
        return self.path / TUNING

    def spool(self, corpus: tuple[str, ...]) -> tuple[str, ...]:
        """The corpus is read twice (count, then encode): inputs that can be read only once are copied into
        the work folder first, each once."""
        spooled = []
        for i, path in enumerate(corpus):
            if not streamed(path):
                spooled.append(path)
                continue
            copy = self.path / (STDIN_COPY if path == "-" else input_copy(i))
            with open(copy, "wb") as handle:
                if path == "-":
                    shutil.copyfileobj(sys.stdin.buffer, handle)
                else:
                    with open(path, "rb") as source:
                        shutil.copyfileobj(source, handle)
            spooled.append(str(copy))
        return tuple(spooled)

    def open(self, print_: dict[str, Any] | None, corpus: tuple[str, ...]) -> tuple[bool, tuple[str, ...]]:
        """Reuse the folder if its fingerprint equals ``print_`` (None: never) and nothing in it is a link; else
        start it afresh (a link is removed, never what it points to), with the inputs of ``corpus`` that can be
        read only once copied in (:meth:`spool`). Returns whether it was reused, and the corpus to read."""
        saved = self.path / FINGERPRINT
        if print_ is not None and saved.is_file():
            try:
                listed_contents(self.path)  # a link anywhere in it: the run would read and write through it
            except ConfigError:
                logger.warning("%s holds a symbolic link, which distill never follows: starting afresh", self.path)
            else:
                with contextlib.suppress(ValueError):
                    if json.loads(saved.read_text(encoding="utf-8")) == print_:
                        return True, corpus
                logger.warning("%s is from a run with other options or corpus: starting afresh", self.path)
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(parents=True)
        if print_ is not None:
            write_json(print_, saved)
        return False, self.spool(corpus)

    def close(self, remove: bool) -> None:
        """``remove``: the run is done (or was never resumable), drop the folder."""
        if remove:
            shutil.rmtree(self.path, ignore_errors=True)

    # -- the counting pass

    def save_vocabulary(self, vocab: Vocabulary, stats: CorpusStats) -> None:
        meta = {
            "words": list(vocab.words),
            "lowercase": vocab.lowercase,
            "dropped": vocab.dropped,
            "corpus": {k: getattr(stats, k) for k in ("files", "lines", "empty_lines", "replaced_lines", "words")},
        }
        np.save(self.path / COUNTS, vocab.counts)
        write_json(meta, self.path / COUNTED_WORDS)

    def load_vocabulary(self) -> tuple[Vocabulary, CorpusStats] | None:
        path = self.path / COUNTED_WORDS
        if not path.is_file():
            return None
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
            vocab = Vocabulary(
                words=tuple(meta["words"]),
                counts=np.load(self.path / COUNTS, allow_pickle=False),
                lowercase=meta["lowercase"],
                dropped=meta["dropped"],
            )
            return vocab, CorpusStats(**meta["corpus"])
        except (OSError, ValueError, KeyError, TypeError, EOFError) as err:
            raise OutputError(
                f"the counted vocabulary in {self.path} is damaged ({err}); run again with --restart"
            ) from err

    # -- the encoding pass

    def save_checkpoint(self, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
        """One file, replaced atomically: the arrays and ``meta`` (JSON) of the state after a chunk."""
        final = self.path / CHECKPOINT
        tmp = self.path / CHECKPOINT_PART
        with open(tmp, "wb") as handle:
            payload: dict[str, Any] = {"_meta": np.array(json.dumps(meta)), **arrays}
            np.savez(handle, **payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, final)

    def load_checkpoint(self) -> tuple[dict[str, np.ndarray], dict[str, Any]] | None:
        path = self.path / CHECKPOINT
        if not path.is_file():
            return None
        try:
            with np.load(path) as data:
                arrays = {k: data[k] for k in data.files if k != "_meta"}
                meta = json.loads(str(data["_meta"]))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            raise OutputError(f"the checkpoint {path} is damaged ({err}); run again with --restart") from err
        return arrays, meta
