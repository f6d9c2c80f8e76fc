"""The frequent words of a language (the ``wordfreq`` package's frequency-ranked list), so that a set holds
the words users look up, not only those its corpus had: a plain word2vec file then rarely needs a fallback."""

from __future__ import annotations

import numpy as np

from distill.corpus import is_alphabetic
from distill.errors import require


def frequent_words(n: int, language: str = "en") -> list[str]:
    """The alphabetic words among the ``n`` most frequent of ``language`` (lowercase, most frequent first;
    English's list holds about 320,000)."""
    wordfreq = require("wordfreq", "lexicon", "adding a language's frequent words")
    return [w for w in wordfreq.top_n_list(language, n) if is_alphabetic(w)]


def word_bags(n: int, seed: int, language: str = "en", top: int = 50_000) -> list[str]:
    """``n`` seeded bags of 5 to 15 words, each drawn from the alphabetic words among ``language``'s ``top``
    most frequent with a chance in proportion to the square root of the word's frequency (common words often,
    rare ones too): the language's words in company, with no corpus text."""
    if n <= 0:
        return []
    wordfreq = require("wordfreq", "lexicon", "tuning on bags of a language's frequent words")
    words = frequent_words(top, language)
    chance = np.sqrt([wordfreq.word_frequency(w, language) for w in words])
    rng = np.random.default_rng(seed)
    sizes = rng.integers(5, 16, size=n)
    drawn = rng.choice(len(words), size=int(sizes.sum()), p=chance / chance.sum())
    return [" ".join(words[i] for i in bag) for bag in np.split(drawn, np.cumsum(sizes)[:-1])]
