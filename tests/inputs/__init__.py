"""bench.inputs: corpora, goldsets, locks and importers."""
