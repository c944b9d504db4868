"""bench.engines: where corpus embedding runs (this process or Ray)."""
