"""The frequent words of a language (the ``wordfreq`` package's frequency-ranked list), so that a set holds
the words users look up, not only those its corpus had: a plain word2vec file then rarely needs a fallback."""

from __future__ import annotations

import numpy as np

from distill.corpus import is_alphabetic
from distill.errors import require
from distill.vectors.faiss_index import build_faiss_index
from distill.vectors.keyed import l2_normalize


def frequent_words(n: int, language: str = "en") -> list[str]:
    """The alphabetic words among the ``n`` most frequent of ``language`` (lowercase, most frequent first;
    English's list holds about 320,000)."""
    wordfreq = require("wordfreq", "lexicon", "adding a language's frequent words")
    return [w for w in wordfreq.top_n_list(language, n) if is_alphabetic(w)]


#: The words bags are drawn from: the alphabetic words among a language's 50,000 most frequent.
BAG_WORDS = 50_000
#: A topic bag's words come from its seed word's nearest this many (itself among them).
TOPIC_NEIGHBOURS = 31


def word_bags(
    n: int, seed: int, language: str = "en", top: int = BAG_WORDS, near: np.ndarray | None = None, share: float = 0.0
) -> list[str]:
    """``n`` seeded bags of 5 to 15 words, each drawn from the alphabetic words among ``language``'s ``top``
    most frequent with a chance in proportion to the square root of the word's frequency (common words often,
    rare ones too): the language's words in company, with no corpus text.

    With ``near`` (row i: the indices in that word list of word i's nearest words, :func:`nearest_words`) and
    ``share`` above 0, each bag is on one topic, as a sentence is: a seed word is drawn the same way, and
    ``share`` of the bag (rounded up) is drawn from its nearest words instead, without repeats."""
    if n <= 0:
        return []
    wordfreq = require("wordfreq", "lexicon", "tuning on bags of a language's frequent words")
    words = frequent_words(top, language)
    chance = np.sqrt([wordfreq.word_frequency(w, language) for w in words])
    chance /= chance.sum()
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 16, size=n)
    drawn = np.split(rng.choice(len(words), size=int(sizes.sum()), p=chance), np.cumsum(sizes)[:-1])
    if near is not None and share > 0:
        if len(near) != len(words):
            raise ValueError(f"near has {len(near)} rows for {len(words)} words")
        centres = rng.choice(len(words), size=n, p=chance)
        drawn = [_on_topic(bag, near[c], share, rng) for bag, c in zip(drawn, centres)]
    return [" ".join(words[i] for i in bag) for bag in drawn]


def _on_topic(bag: np.ndarray, near: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """``bag`` with ``share`` of it (rounded up) drawn from ``near`` instead, in a shuffled order."""
    k = min(int(np.ceil(share * len(bag))), len(near))
    mixed = np.concatenate([rng.choice(near, size=k, replace=False), bag[k:]])
    rng.shuffle(mixed)
    return mixed


def nearest_words(vectors: np.ndarray, k: int = TOPIC_NEIGHBOURS) -> np.ndarray:
    """Each row's ``k`` nearest rows by cosine (exact search; the row itself first), as an (n, k) index array."""
    index = build_faiss_index(vectors)
    _, near = index.search(np.ascontiguousarray(l2_normalize(vectors), dtype=np.float32), min(k, len(vectors)))
    return near
