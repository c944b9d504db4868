"""Vector stores: where a dense first stage's vectors are indexed and searched.

FAISS runs in this process; PostgreSQL + pgvector, LanceDB and Chroma are the stores teams deploy,
each behind the same small interface (``base.VectorStore``). The retriever above them keeps what
every store shares: embedding and its cache, truncation, ties ordered by unit id, scores of given
chunks and recall against the exact search.
"""
