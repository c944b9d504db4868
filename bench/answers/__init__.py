"""The answer layer (docs/answers.md): answers generated from a run's contexts, judged claim by
claim, scored beside the retrieval metrics of the same questions."""
