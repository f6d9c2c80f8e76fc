"""Word weights for sentence embeddings, baked into the vectors so that the plain model2vec and
sentence-transformers loaders (a sentence = the mean of its words' vectors) apply them.

- ``sif``: a / (a + p(w)) (Arora et al. 2017), p(w) from the run's own word counts;
- ``usif``: a / (a/2 + p(w)) with a set from the vocabulary size and the corpus's sentence length
  (Ethayarajh 2018);
- ``zipf``: model2vec's SIF from the frequency rank alone, 1e-4 / (1e-4 + p(rank)), p Zipfian;
- ``remove``: the top principal directions of the frequency-weighted vectors, projected out of every
  vector (common-component removal; a projection commutes with the mean, so it is exact for sentences).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from distill.choices import Choice
from distill.errors import ConfigError
from distill.vectors.keyed import l2_normalize


class Weighting(Choice):
    """How much each word counts in a sentence."""

    NONE = "none"
    SIF = "sif"
    USIF = "usif"
    ZIPF = "zipf"


@dataclass(frozen=True)
class SentenceRecipe:
    """How word vectors are made ready for sentences."""

    weighting: Weighting = Weighting.NONE
    unit: bool = True  # unit-normalise the word vectors before weighting
    remove: int = 0  # top principal directions removed
    sif_a: float = 1e-3

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "weighting": self.weighting.value}

    @property
    def name(self) -> str:
        parts = [self.weighting.value] + (["unit"] if self.unit else []) + ([f"rm{self.remove}"] if self.remove else [])
        return ".".join(parts)


def probabilities(counts: np.ndarray) -> np.ndarray:
    """Each word's share of the vocabulary's occurrences."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.sum() <= 0:
        raise ConfigError("word counts are needed for sif/usif weights (the run's vocab.tsv)")
    return counts / counts.sum()


def sif_weights(counts: np.ndarray, a: float = 1e-3) -> np.ndarray:
    return a / (a + probabilities(counts))


def usif_weights(counts: np.ndarray, words_per_sentence: float) -> np.ndarray:
    """uSIF: alpha = share of words likelier than 1 - (1 - 1/|V|)^n, a = (1 - alpha) / (alpha |V| / 2)."""
    p = probabilities(counts)
    n_vocab = len(p)
    threshold = 1 - (1 - 1 / n_vocab) ** max(words_per_sentence, 1.0)
    alpha = max(float((p > threshold).mean()), 1.0 / n_vocab)
    a = (1 - alpha) / (alpha * n_vocab / 2)
    return a / (a / 2 + p)


def zipf_weights(n_words: int, coefficient: float = 1e-4) -> np.ndarray:
    """model2vec's weights from the frequency rank alone (words in descending frequency order)."""
    inverse_rank = 1 / np.arange(2, n_words + 2, dtype=np.float64)
    return coefficient / (coefficient + inverse_rank / inverse_rank.sum())


def remove_directions(x: np.ndarray, weights: np.ndarray, k: int) -> np.ndarray:
    """Project out the top ``k`` right singular vectors of the rows weighted by ``sqrt(weights)`` (the
    directions every sentence shares, as frequent words dominate sentence means)."""
    if k <= 0:
        return x
    _, _, vt = np.linalg.svd(x.astype(np.float64) * np.sqrt(weights)[:, None], full_matrices=False)
    top = vt[:k]
    return (x - (x @ top.T) @ top).astype(np.float32)


def apply_recipe(
    vectors: np.ndarray, counts: np.ndarray | None, recipe: SentenceRecipe, words_per_sentence: float = 20.0
) -> np.ndarray:
    """The vectors ready for sentence means: unit (if asked), directions removed, scaled by their weight."""
    x = l2_normalize(vectors) if recipe.unit else np.asarray(vectors, dtype=np.float32)
    needs_counts = recipe.weighting in (Weighting.SIF, Weighting.USIF) or recipe.remove
    if needs_counts and counts is None:
        raise ConfigError("this sentence recipe needs the run's word counts (vocab.tsv)")
    if recipe.remove:
        x = remove_directions(x, probabilities(counts), recipe.remove)  # type: ignore[arg-type]
    if recipe.weighting is Weighting.SIF:
        w = sif_weights(counts, recipe.sif_a)  # type: ignore[arg-type]
    elif recipe.weighting is Weighting.USIF:
        w = usif_weights(counts, words_per_sentence)  # type: ignore[arg-type]
    elif recipe.weighting is Weighting.ZIPF:
        w = zipf_weights(len(x))
    else:
        return x
    return (x * w[:, None]).astype(np.float32)
