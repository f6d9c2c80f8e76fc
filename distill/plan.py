"""What a run's options resolve to, checked before anything is written or loaded: the model's source and
config, the corpus, the output folder, the layers encoded and the sets written; then the encoder."""

from __future__ import annotations

import logging
import os
import platform
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from distill.config import Pooling, RunConfig, best_layers
from distill.derived import DerivePooling, Recipe
from distill.encoders import Encoder, is_causal, is_elmo, load_encoder, load_encoder_config
from distill.errors import ConfigError, require
from distill.paths import default_corpus, default_gguf, default_out, resolve_model
from distill.vectors.postprocess import Combine

logger = logging.getLogger(__name__)

_PACKAGES = ("distill", "torch", "transformers", "tokenizers", "numpy", "gensim", "faiss-cpu", "scikit-learn")


@dataclass(frozen=True)
class Plan:
    """What the options resolve to."""

    config: RunConfig
    source: str  # hub id or local folder
    out: Path
    corpus: tuple[str, ...]
    gguf_file: str | None
    model_config: Any
    layers: tuple[int, ...]  # layers encoded: those asked for and those the recommended set needs
    sets: tuple[tuple[int, Pooling], ...]  # (layer, pooling) sets written
    best: Recipe | None  # the recommended set, derived from the vectors in memory
    model_files: tuple[dict[str, Any], ...] = ()  # a local model's files, sizes and digests (the run's claim)
    given: dict[str, str] = field(default_factory=dict)  # a copy in the work folder -> the input it was read from

    @property
    def n_layers(self) -> int:
        """The model's hidden layers (0, the embedding output, not counted)."""
        return int(self.model_config.num_hidden_layers)

    @property
    def reduced(self) -> tuple[tuple[int, Pooling], ...]:
        """Every (layer, pooling) reduced: the sets written, then those only the recommended set needs."""
        top = self.best.layers.resolve(self.n_layers) if self.best is not None else ()
        extra = [(layer, Pooling.MEAN) for layer in top if (layer, Pooling.MEAN) not in self.sets]
        return self.sets + tuple(extra)


def package_versions() -> dict[str, str]:
    """The versions of Python and of the packages a run's vectors depend on."""
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def plan_run(config: RunConfig) -> Plan:
    """Resolve and check everything that can be checked without loading weights or reading the corpus."""
    corpus = config.corpus or (str(default_corpus()),)
    out = Path(config.out) if config.out else default_out(config.model, corpus)
    source = resolve_model(config.model)
    gguf_file = config.gguf_file or default_gguf(config.model)
    if not config.corpus and not Path(corpus[0]).is_file():
        raise ConfigError(f"the default corpus {corpus[0]} is missing; set DISTILL_DATA or pass --corpus FILE")
    if os.path.exists(source):  # a local folder is recorded whole: the run can be queried from anywhere
        source = os.path.abspath(source)
    if os.path.isdir(source) and out.resolve().is_relative_to(Path(source).resolve()):
        raise ConfigError(f"--out {out} is inside the model folder {source}: the run's files would mix with the "
                          "model's (and change what the run was made from); choose another --out")  # fmt: skip
    elmo = is_elmo(source)
    if elmo:
        require("h5py", "elmo", "reading ELMo's weights")
    if gguf_file is not None:
        require("gguf", "gguf", "loading GGUF weights")
        require("accelerate", "gguf", "loading GGUF weights")
    model_config = load_encoder_config(config.model, source, config.revision, gguf_file)
    causal = is_causal(model_config)
    config = config.for_model(getattr(model_config, "max_position_embeddings", None), elmo, causal)
    n_layers = int(model_config.num_hidden_layers)
    asked = config.layers.resolve(n_layers)
    sets = tuple((layer, pooling) for layer in asked for pooling in config.pooling)
    best, layers = None, asked
    if config.best:
        top = best_layers(n_layers, causal) if config.best_layers is None else config.best_layers
        best = Recipe(top, DerivePooling.MEAN, Combine.MEAN, alone=config.alone_weight, words=config.language_words,
                      pool=config.alone_pool)  # fmt: skip
        layers = tuple(sorted(set(asked) | set(top.resolve(n_layers))))
    if config.teacher and causal:
        logger.warning("%s is a causal LM: --teacher pools its last layer, which is no sentence embedding", source)
    if config.teacher:  # the teacher's sentence embedding pools the last layer
        layers = tuple(sorted(set(layers) | {n_layers}))
    return Plan(config, source, out, corpus, gguf_file, model_config, layers, sets, best)


def load_model(plan: Plan) -> Encoder:
    """The encoder the plan names, running the layers it encodes."""
    config = plan.config
    encoder = load_encoder(config.model, plan.source, plan.layers, device=config.device, dtype=config.dtype.value,
                           max_length=config.max_length, revision=config.revision, gguf_file=plan.gguf_file,
                           config=plan.model_config, progress=config.progress)  # fmt: skip
    logger.info("model %s: %d layers, hidden %d, %s on %s", plan.source, encoder.n_layers, encoder.hidden_size,
                str(encoder.dtype).removeprefix("torch."), encoder.device)  # fmt: skip
    return encoder
