"""bench.retrieval: FAISS indexes, BM25 and the retrievers."""
