"""bench.results: stored runs, history, the regression gate and exports."""
