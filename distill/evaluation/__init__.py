"""Scoring static vectors: benchmark files, metrics, the report, and the same-corpus baselines and Table 1."""
