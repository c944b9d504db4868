"""Retrieval: FAISS indexes, the BM25 inverted index, and the retrievers that search them."""
