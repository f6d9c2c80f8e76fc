"""Sharing an export: ``distill export --push-to-hub REPO`` uploads a folder format (with its model card) to
the Hugging Face hub through ``huggingface_hub``; without a connection or a login it fails with one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from distill.errors import ConfigError
from distill.files import write_text


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
