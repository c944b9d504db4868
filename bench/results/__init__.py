"""Results on disk: the run folder, history across runs, the regression gate and exports."""
