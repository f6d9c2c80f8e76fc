"""Word vectors in the formats users load: gensim ``KeyedVectors``, word2vec text/binary, FAISS indexes."""
