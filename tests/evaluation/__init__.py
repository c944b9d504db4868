"""bench.evaluation: relevance, metrics, diagnostics, findings, statistics and costs."""
