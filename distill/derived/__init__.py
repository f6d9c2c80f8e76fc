"""Better sets from a finished run's vectors, without running the model again: combined layers, pc+mean,
all-but-the-top, whitening."""

from distill.derived.recipe import DerivePooling, Recipe, derive, derived_vectors, zero_counts

__all__ = ["DerivePooling", "Recipe", "derive", "derived_vectors", "zero_counts"]
