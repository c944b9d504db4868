"""bench.embedders: model specs, loaders, the embedding cache and model installs."""
