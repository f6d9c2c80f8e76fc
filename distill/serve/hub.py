"""Sharing an export: ``distill export --push-to-hub REPO`` uploads a folder format (with its model card) to
the Hugging Face hub through ``huggingface_hub``; without a connection or a login it fails with one line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distill.errors import ConfigError
from distill.files import write_text
from distill.serve.formats import Format

#: The folder formats a hub repository holds, one per repository: each with its model card.
PUSHED = (Format.MODEL2VEC, Format.SENTENCE_TRANSFORMERS)


def check_push(repo_id: str, formats: Sequence[Format]) -> None:
    """Refuse, before anything is exported, a push that cannot work: a repository id the hub refuses, or not
    exactly one folder format to upload (two would overwrite each other's files in one repository)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise ConfigError(
            f"--push-to-hub {repo_id!r} is not a hub repository id: {' '.join(str(err).split())}"
        ) from err
    pushed = [f.value for f in formats if f in PUSHED]
    if len(pushed) != 1:
        given = f"--format gives {' and '.join(pushed)}" if pushed else "--format gives neither"
        raise ConfigError(
            f"--push-to-hub uploads one model2vec or sentence-transformers folder, a repository each ({given}): "
            "add --format model2vec or --format sentence-transformers"
        )


def push_folder(folder: Path, repo_id: str, card: str) -> str:
    """Write ``card`` as the folder's README.md, create ``repo_id`` if needed, upload; returns the commit URL."""
    from huggingface_hub import HfApi

    write_text(card, folder / "README.md")
    api = HfApi()
    try:
        api.create_repo(repo_id, exist_ok=True)
        info: Any = api.upload_folder(folder_path=str(folder), repo_id=repo_id, commit_message="distill export")
    except Exception as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise ConfigError(
            f"cannot push {folder} to the hub repository {repo_id}: {reason}; check the network (HF_HUB_OFFLINE "
            "must be unset) and log in with `hf auth login`; the export itself is written"
        ) from err
    return str(getattr(info, "commit_url", info))
