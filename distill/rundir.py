"""A run folder: its manifest (every change to it under the run's lock), its vocabulary and its vector sets,
each a word2vec text and binary file, a FAISS index and its word list. :mod:`distill.names` names the files.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from distill.config import ALL_FORMATS, Pooling, SetFormat
from distill.errors import ConfigError
from distill.files import (
    LISTING,
    atomic_path,
    bare_name,
    check_writable,
    is_bare_name,
    is_replaceable,
    member,
    sha256_file,
    subfolder,
    write_json,
)
from distill.lock import FolderLock
from distill.manifest import check_manifest, is_our_manifest
from distill.names import (
    EXPORT_DIR,
    LOCK_FILE,
    MANIFEST,
    VOCAB,
    WORK_DIR,
    export_entry,
    is_pieces_file,
    is_run_output,
    is_temporary,
    layer_file,
    set_name,
    set_of_file,
    split_export_entry,
)


def words_per_line(manifest: dict[str, Any]) -> float:
    """A run's corpus words per line (uSIF's sentence length)."""
    return manifest["corpus"]["words"] / max(manifest["corpus"]["lines"], 1)


def check_own_folder(folder: Path, holding: str) -> None:
    """ConfigError when ``folder`` is a run folder or an export, whose own files ``holding`` would mix with or
    replace: they go in a folder of their own."""
    for name, what in ((MANIFEST, "a distill run folder"), (LISTING, "a distill export")):
        if (folder / name).exists() or (folder / name).is_symlink():
            raise ConfigError(
                f"{folder} is {what} ({name}); {holding} go in a folder of their own: choose another --out"
            )


def listed_files(folder: Path) -> set[str]:
    """The files a distill run's manifest in ``folder`` lists (none when there is no manifest of ours)."""
    path = folder / MANIFEST
    data = read_json_file(path)
    if not is_our_manifest(data):
        return set()
    return {name for name in data["files"] if is_bare_name(name)}


def read_json_file(path: Path) -> Any:
    """A JSON file's data; None when there is none, it is a symbolic link (never followed) or it is not JSON."""
    if not path.is_file() or path.is_symlink():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def has_piece_vectors(folder: Path) -> bool:
    """Whether a run folder holds piece vectors (``--pieces``), checked without reading them."""
    return any(is_pieces_file(p.name) for p in folder.iterdir()) if folder.is_dir() else False


def write_vocab(words: Sequence[str], counts: np.ndarray, path: str | Path) -> Path:
    """``word<TAB>count`` per line, most frequent first: the run's vocabulary, for baselines trained on it."""
    with atomic_path(path) as tmp:
        tmp.write_text("".join(f"{w}\t{int(c)}\n" for w, c in zip(words, counts)), encoding="utf-8")
    return Path(path)


def read_vocab_counts(path: str | Path) -> dict[str, int]:
    """``word -> count`` from a ``vocab.tsv`` (as :func:`write_vocab` writes it), most frequent first."""
    table = {}
    try:
        for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
            word, sep, count = line.partition("\t")
            if not sep or not word or not count.isdigit():
                raise ConfigError(f"{path}, line {number}: not 'word<TAB>count'; the file is damaged")
            table[word] = int(count)
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read {path} ({err}); the file is damaged") from err
    return table


@dataclass(frozen=True)
class RunDir:
    """A finished (or running) distillation's output folder."""

    path: Path

    def __init__(self, path: str | Path) -> None:
        object.__setattr__(self, "path", Path(path))

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def vocab_path(self) -> Path:
        return self.path / VOCAB

    def file(self, name: str, suffix: str = ".txt") -> Path:
        """A file of set ``name``: ``.txt``, ``.bin``, ``.faiss`` or ``.faiss.words.txt``; a plain name inside
        the folder, never a link."""
        return member(self.path, f"{bare_name(name, self.manifest_path)}{suffix}", self.manifest_path)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """Hold the run's lock (``.distill.lock``), waiting for another command that holds it."""
        return self._lock().held()

    def _lock(self) -> FolderLock:
        return FolderLock(member(self.path, LOCK_FILE))  # never a link

    def claim(self) -> FolderLock:
        """Take the run's lock for a whole distillation, without waiting: a second run writing here at once is
        refused, and commands that change the manifest (:meth:`update_manifest`) wait for the run. The caller
        releases it. The folder is made first, and proved writable; a folder ``distill export`` wrote is refused
        before anything is written into it (it would stop being an export distill may replace)."""
        if (self.path / LISTING).is_file() and not self.manifest_path.exists():
            raise ConfigError(
                f"{self.path} is an export (its {LISTING} lists what distill wrote), not a run folder: choose another "
                "--out"
            )
        check_writable(self.path)
        lock = self._lock()
        if not lock.acquire(wait=False):
            raise ConfigError(f"another distill run is writing to {self.path}; wait for it or give another --out")
        return lock

    def write_manifest(self, data: dict[str, Any]) -> None:
        """Write a finished run's manifest, last (the run holds the lock: :meth:`claim`), with the sha256 of each
        file it lists: what :meth:`intact` proves them by."""
        checked = check_manifest(data, self.manifest_path)
        checked["digests"] = self._digests(checked["files"])
        write_json(checked, self.manifest_path)

    def _digests(self, names: Iterable[str]) -> dict[str, str]:
        """The sha256 of each of ``names`` that is a plain file of the folder."""
        paths = {name: member(self.path, name, self.manifest_path) for name in names}
        return {name: sha256_file(path) for name, path in paths.items() if path.is_file()}

    def finished_manifest(self) -> dict[str, Any] | None:
        """The manifest of the finished run here when no run is under way in the folder; else None. Its files are
        proven by :meth:`intact`."""
        if (self.path / WORK_DIR).exists() or not self.is_run():
            return None
        try:
            return self.manifest()
        except ConfigError:
            return None

    def intact(self, data: dict[str, Any]) -> bool:
        """Whether every file manifest ``data`` lists is here, a plain file, with the contents it was written with
        (the digests :meth:`write_manifest` and :meth:`update_manifest` record)."""
        digests = data.get("digests")
        if not isinstance(digests, dict) or set(digests) != set(data["files"]):
            return False
        try:
            return self._digests(data["files"]) == digests
        except (ConfigError, OSError):  # a link, or a file gone while being read
            return False

    def add_set(
        self, name: str, record: dict[str, Any], files: Sequence[str], recommend: bool = False
    ) -> dict[str, Any]:
        """Record a set made from the run (``derived[name]``) and list its ``files``, under the run's lock:
        commands adding sets to one run at once never lose each other's. ``recommend``: it becomes the run's
        recommended set."""

        def change(data: dict[str, Any]) -> None:
            data.setdefault("derived", {})[bare_name(name, self.path)] = record
            if recommend:
                data["best"] = bare_name(name, self.path)

        return self.update_manifest(files, change)

    def record_exports(self, paths: Sequence[Path], vector_set: str | None = None) -> None:
        """List ``paths`` made from this run's sets and written into its folder or its ``export/`` (``distill
        model``'s folders, ``distill export``'s outputs, ``distill evaluate``'s report) in the manifest: the next
        run here removes them with the vectors they were made from, rather than leaving them stale, and so does a
        set ``vector_set`` (the one they were made from) written again with other vectors
        (:meth:`remove_exports_of`). Paths elsewhere are not the run's and are left out."""
        names = {name for name in map(self._export_entry, paths) if name is not None}
        if not names:
            return

        def change(data: dict[str, Any]) -> None:
            data["exports"] = sorted(names.union(data.get("exports", [])))
            if vector_set is not None:
                data["exported_from"] = {**data.get("exported_from", {}), **dict.fromkeys(sorted(names), vector_set)}

        self.update_manifest([], change)

    def replacing_set(self, vector_set: str, kv: Any) -> None:
        """Before set ``vector_set`` is written again as ``kv`` (``distill tune`` with other options keeps its
        name): what was exported from it goes, unless its words and vectors are the same to the bit (the old set
        is read only when something was exported from it)."""
        manifest = self.manifest()
        if vector_set not in sets_of(manifest) or vector_set not in manifest.get("exported_from", {}).values():
            return
        old = self.load(vector_set)
        if old.index_to_key != kv.index_to_key or not np.array_equal(old.vectors, kv.vectors):
            self.remove_exports_of(vector_set)

    def remove_exports_of(self, vector_set: str) -> None:
        """Remove what was exported from ``vector_set`` into the run (:meth:`record_exports`), and its listing."""

        def change(data: dict[str, Any]) -> None:
            made = {name for name, source in data.get("exported_from", {}).items() if source == vector_set}
            _remove_made([self._export_member(name) for name in sorted(made)])
            data["exports"] = [name for name in data.get("exports", []) if name not in made]
            data["exported_from"] = {k: v for k, v in data.get("exported_from", {}).items() if k not in made}

        self.update_manifest([], change)

    def _export_entry(self, path: Path) -> str | None:
        """``path`` as the manifest lists an export: its name in the run folder, or ``export/NAME``."""
        home, parent = self.path.resolve(), path.parent
        if parent.resolve() == home:
            return export_entry(path.name, in_export_dir=False)
        export = self.path / EXPORT_DIR
        if not export.is_symlink() and parent.resolve() == export.resolve():
            return export_entry(path.name, in_export_dir=True)
        return None

    def _export_member(self, entry: str) -> Path:
        """The path of a manifest's export entry (:meth:`_export_entry`), checked as :func:`member` checks."""
        folder, name = split_export_entry(entry)
        return member(self.path if folder is None else subfolder(self.path, folder), name, self.manifest_path)

    def update_manifest(
        self, files: Sequence[str], change: Callable[[dict[str, Any]], None] | None = None
    ) -> dict[str, Any]:
        """Read the manifest, list ``files`` (and apply ``change``), and write it back, all under the run's lock."""
        with self.locked():
            data = self.manifest()
            if change is not None:
                change(data)
            names = [bare_name(f, self.path) for f in files]
            data["files"] += [name for name in names if name not in data["files"]]
            kept = {k: v for k, v in data.get("digests", {}).items() if k in data["files"] and k not in names}
            data["digests"] = {**kept, **self._digests(names)}  # the files listed now may have been written again
            write_json(data, self.manifest_path)
        return data

    def is_run(self) -> bool:
        return self.manifest_path.is_file()

    def manifest(self) -> dict[str, Any]:
        """The ``manifest.json`` of a finished run; ConfigError when the folder is not one."""
        if not self.manifest_path.is_file():
            if (self.path / LISTING).is_file():
                raise ConfigError(
                    f"{self.path} is an export (its {LISTING} lists what distill wrote), not a run folder: give the "
                    "run folder it came from"
                )
            files = sorted(p.name for p in self._entries() if layer_file(p.name))
            if files and (self.path / VOCAB).is_file():
                raise ConfigError(
                    f"{self.path} holds vector files but no {MANIFEST}: the run that wrote them did not finish "
                    "(killed, or the disk filled up); run it again"
                )
            if files:
                raise ConfigError(
                    f"{self.path} holds vector files but is no run folder (no {MANIFEST}): give one of its files, "
                    f"such as {self.path / files[0]}"
                )
            raise ConfigError(f"{self.path} is not a distill run folder (no {MANIFEST})")
        if self.manifest_path.is_symlink():
            raise ConfigError(f"{self.manifest_path} is a symbolic link; distill never follows links in its folders")
        return check_manifest(read_json_file(self.manifest_path), self.manifest_path)

    def _entries(self) -> list[Path]:
        return list(self.path.iterdir()) if self.path.is_dir() else []

    def check_complete(self) -> dict[str, Any]:
        """The manifest, once every file it lists is there and no vector set it does not list is."""
        data = self.manifest()
        listed = set(data["files"])
        missing = sorted(name for name in listed if not member(self.path, name, self.manifest_path).is_file())
        unlisted = sorted(p.name for p in self._entries() if layer_file(p.name) and p.name not in listed)
        if missing or unlisted:
            what = f"{missing[0]} is missing" if missing else f"{unlisted[0]} is not from its run"
            raise ConfigError(f"{self.path} is incomplete or mixed ({what}); run the distillation again")
        return data

    def clear_previous(self, unfinished: bool = False) -> None:
        """Before a new run writes here: the previous run's manifest goes first (the folder stops looking
        finished), then the files it lists, what was exported or reported from them into it
        (:meth:`record_exports`; ``export/`` too once empty), and temporaries a killed run left. Files that no
        run of ours wrote are left alone, and refused where the run would replace them: a ``manifest.json``
        distill did not write, or a file of a name a run writes that no manifest lists (``unfinished``: the
        folder holds an unfinished run's work folder, whose files these may be)."""
        data: dict[str, Any] | None = None
        if self.manifest_path.exists() or self.manifest_path.is_symlink():
            data = read_json_file(self.manifest_path)
            if self.manifest_path.is_symlink() or not is_our_manifest(data):
                raise ConfigError(
                    f"{self.manifest_path} was not written by distill and would be overwritten; choose another --out"
                )
            data = check_manifest(data, self.manifest_path)
        if not unfinished:
            made = [*data["files"], *(split_export_entry(e)[1] for e in data.get("exports", []))] if data else []
            self._check_not_foreign({MANIFEST, *made})
        if data is not None:
            targets = [member(self.path, name, self.manifest_path) for name in data["files"]]  # all checked first
            exports = [self._export_member(name) for name in data.get("exports", [])]
            self.manifest_path.unlink()
            for target in targets:
                if target.is_file():
                    target.unlink()
            _remove_made(exports)  # made from the vectors just removed
        for stale in self._entries():
            if is_temporary(stale.name) and (stale.is_file() or stale.is_symlink()):
                stale.unlink()

    def _check_not_foreign(self, ours: set[str]) -> None:
        for entry in self._entries():
            if entry.name not in ours and is_run_output(entry.name) and (entry.is_file() or entry.is_symlink()):
                raise ConfigError(
                    f"{entry} was not written by a distill run here (no manifest lists it) and a run would replace "
                    "it; remove it or choose another --out"
                )

    def counts(self, words: Sequence[str], vector_set: str | None = None) -> np.ndarray | None:
        """Corpus counts of ``words`` from ``vocab.tsv``; None for a run made before it was written. The words
        ``vector_set`` added from the language's list (the last ones; its recipe's ``words_added``) count 0."""
        if not self.vocab_path.is_file():
            return None
        added = self.words_added(vector_set) if vector_set is not None else 0
        corpus = list(words[: len(words) - added])
        table = read_vocab_counts(member(self.path, VOCAB))
        missing = next((w for w in corpus if w not in table), None)
        if missing is not None:
            raise ConfigError(f"{self.vocab_path} does not list {missing!r}, a word of the run: it is damaged")
        return np.array([table[w] for w in corpus] + [0] * added, dtype=np.int64)

    def words_added(self, vector_set: str) -> int:
        """How many of a set's words (the last) come from the language's list, read alone (0 for most sets)."""
        manifest = self.manifest()
        record = (manifest.get("derived") or {}).get(untuned_set(manifest, vector_set)) or {}
        added = record.get("words_added", 0)
        return added if isinstance(added, int) and added >= 0 else 0

    def set_for(self, layer: int | None = None, pooling: str = "pc") -> str:
        """The name of a layer's set (default: the run's first layer)."""
        if layer is None:
            layer = self.manifest()["layers"][0]
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or layer < 0:
            raise ConfigError(f"layer {layer!r} is not a layer number; give an integer such as 1 (0 = embeddings)")
        try:
            return set_name(layer, Pooling(pooling))
        except ValueError as err:
            raise ConfigError(
                f"unknown pooling {pooling!r}; use one of: {', '.join(p.value for p in Pooling)}"
            ) from err

    def resolve_set(self, vector_set: str | None = None, layer: int | None = None, pooling: str | None = None) -> str:
        """The set a user means: ``vector_set`` by name (``best``: the recommended one), else a layer and
        pooling (by default the run's first), else the recommended set when the run has one, else its first
        layer's set."""
        data = self.manifest()
        if vector_set is not None and (layer is not None or pooling is not None):
            raise ConfigError("give either --set or --layers/--pooling, not both")
        if vector_set is None and (layer is not None or pooling is not None or not data.get("best")):
            return self.set_for(layer, pooling or (data.get("pooling") or [Pooling.PC.value])[0])
        name = data.get("best") if vector_set in (None, "best") else vector_set
        if name is None or name not in sets_of(data):
            what = "no recommended set (distil with --best)" if name is None else f"no set {name}"
            raise ConfigError(f"{self.path} has {what}; its sets: {', '.join(sets_of(data))}")
        return name

    def write_set(
        self,
        name: str,
        kv: Any,
        submit: Callable[..., Any] | None = None,
        formats: Sequence[SetFormat] = ALL_FORMATS,
        submit_text: Callable[..., Any] | None = None,
    ) -> list[Any]:
        """Write set ``name`` as ``formats`` (text, binary, FAISS index: :func:`~distill.names.set_files` names
        them); ``submit(fn, *args, **kwargs)`` may run the writes elsewhere (an executor's ``submit``), and
        ``submit_text`` the text file's, which needs only numpy and arguments that pickle (a process pool's
        ``submit``): returns what they return, else the paths."""
        from distill.vectors.faiss_index import write_faiss
        from distill.vectors.keyed import file_rows, write_rows, write_word2vec

        run = submit or (lambda fn, *args, **kwargs: fn(*args, **kwargs))
        writes = {
            SetFormat.TXT: lambda: (
                submit_text(write_rows, *file_rows(kv), self.file(name, ".txt"))
                if submit_text
                else run(write_word2vec, kv, self.file(name, ".txt"), binary=False)
            ),
            SetFormat.BIN: lambda: run(write_word2vec, kv, self.file(name, ".bin"), binary=True),
            SetFormat.FAISS: lambda: run(write_faiss, kv.index_to_key, kv.vectors, self.file(name, ".faiss")),
        }
        return [write() for f, write in writes.items() if f in formats]

    def load(self, name: str) -> Any:
        """Set ``name`` as gensim ``KeyedVectors`` (from its binary file), from a complete run only."""
        return load_file(self.set_binary(name))

    def sets(self) -> Mapping[str, Any]:
        """Every set of the run by name, each read from its binary file when first asked for."""
        return _LazySets(self, tuple(sets_of(self.manifest())))

    def set_binary(self, name: str) -> Path:
        """The binary word2vec file of set ``name``, from a complete run only."""
        data = self.check_complete()
        if self.file(name, ".bin").name not in data["files"]:
            raise ConfigError(f"{self.path} has no set {name}; its sets: {', '.join(sets_of(data))}")
        return self.file(name, ".bin")


class _LazySets(Mapping[str, Any]):
    """:meth:`RunDir.sets`: a run's sets by name, read when first asked for (a large run's sets are gigabytes)."""

    def __init__(self, run: RunDir, names: tuple[str, ...]) -> None:
        self._run, self._names = run, names
        self._read: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._names:
            raise KeyError(name)
        if name not in self._read:
            self._read[name] = self._run.load(name)
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def _remove_made(paths: Sequence[Path]) -> None:
    """Remove files and folders made from a run's sets (a folder a user added files to stays), then the run's
    ``export/`` where that left it empty."""
    for made in paths:
        if made.is_dir() and is_replaceable(made):
            shutil.rmtree(made)
        elif made.is_file():
            made.unlink()
    folders = {made.parent for made in paths if made.parent.name == EXPORT_DIR}
    for export in folders:
        if export.is_dir() and not export.is_symlink() and not any(export.iterdir()):
            export.rmdir()


def sets_of(manifest: dict[str, Any]) -> list[str]:
    """The names of the vector sets a run's manifest lists."""
    return [name for name in map(set_of_file, manifest["files"]) if name is not None]


def load_file(path: str | Path) -> Any:
    """A ``.txt`` or ``.bin`` word2vec file (or a header-less GloVe text file) as gensim ``KeyedVectors``; a
    truncated or damaged file is one ConfigError."""
    from distill.vectors.reader import read_vectors

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no vector file at {path}")
    if path.suffix == ".kv":  # gensim's own format is a pickle: loading it could run code
        raise ConfigError(
            f"{path} is gensim's native format, a pickle, which distill never loads (it can run code): give the "
            ".bin or .txt set, or load it with KeyedVectors.load if you trust where it came from"
        )
    return read_vectors(path)


def load(path: str | Path, layer: int | None = None, pooling: str | None = None, vector_set: str | None = None) -> Any:
    """Vectors as gensim ``KeyedVectors``: a ``.txt``/``.bin`` file, or a set of a run folder: by name
    (``vector_set``, ``"best"`` for the recommended one), by layer and pooling, or by default the recommended
    set (the first layer's when the run has none). ``distill.load`` adds the run's piece fallback
    (:func:`distill.serve.anyword.load`)."""
    path = Path(path)
    if path.is_dir():
        run = RunDir(path)
        return run.load(run.resolve_set(vector_set, layer, pooling))
    check_no_set(path, layer, pooling, vector_set)
    return load_file(path)


def check_no_set(path: Path, layer: int | None, pooling: str | None, vector_set: str | None) -> None:
    """ConfigError when a set is asked of a vector file: only a run folder has sets to choose from."""
    if layer is not None or pooling is not None or vector_set is not None:
        raise ConfigError(
            f"{path} is a vector file, not a run folder: a set (--set, or --layers and --pooling) is chosen in "
            "a run folder; leave them out"
        )


def untuned_set(manifest: dict[str, Any], vector_set: str) -> str:
    """The set a tuned set was tuned from (that set's own, for one tuned again); ``vector_set`` for others."""
    record = (manifest.get("derived") or {}).get(vector_set) or {}
    return untuned_set(manifest, str(record["tuned_from"])) if "tuned_from" in record else vector_set
