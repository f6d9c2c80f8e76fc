"""The STS columns every sentence sweep of benchmarks/ prints, and a table scored as ``distill export`` ships it
(the scripts beside this file import it by its bare name, ``sts_columns``)."""

from __future__ import annotations

from typing import Any

import numpy as np
from model2vec import StaticModel

from distill.evaluation.sentences import DEV_YEARS, SentenceScore, StsPairs, score_sts

STS_HEADER = "STS12 (test) | STS13 | STS14 | STS15 | STS16 | dev 12-14 (all pairs) | MTEB 12-16 | STS 13-16"


def table_score(rows: np.ndarray, tokenizer: Any, pairs: StsPairs, label: str) -> SentenceScore:
    """STS of a token table read as its model2vec export reads it (the rows' own norms kept)."""
    model = StaticModel(rows, tokenizer, normalize=False)
    return score_sts(lambda s: model.encode(s, show_progress_bar=False), pairs, label)


def sts_cells(score: SentenceScore, mean_digits: int = 1) -> str:
    """The cells under :data:`STS_HEADER`: the MTEB splits, then the dev years' all-pairs mean and the two MTEB
    means to ``mean_digits`` decimals."""
    means = [score.mean(DEV_YEARS), score.mteb_mean(), score.mean_13_16()]
    return " | ".join([*(f"{v:.1f}" for v in score.mteb().values()), *(f"{v:.{mean_digits}f}" for v in means)])
