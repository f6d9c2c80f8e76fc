"""Serving the vectors: neighbour search, export formats, compression, piece vectors for unseen words."""
