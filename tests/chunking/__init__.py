"""bench.chunking: chunkers, chunk tables, token counts and sizes."""
