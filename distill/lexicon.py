"""The frequent words of a language (the ``wordfreq`` package's frequency-ranked list), so that a set holds
the words users look up, not only those its corpus had: a plain word2vec file then rarely needs a fallback."""

from __future__ import annotations

from distill.corpus import is_alphabetic
from distill.errors import require


def frequent_words(n: int, language: str = "en") -> list[str]:
    """The alphabetic words among the ``n`` most frequent of ``language`` (lowercase, most frequent first;
    English's list holds about 320,000)."""
    wordfreq = require("wordfreq", "lexicon", "adding a language's frequent words")
    return [w for w in wordfreq.top_n_list(language, n) if is_alphabetic(w)]
