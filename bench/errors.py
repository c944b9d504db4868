"""The one exception type that means "the user's input is wrong": the CLI prints it as one line, exit 2."""

import numpy as np


class BenchError(Exception):
    """Bad input or configuration. The message names where (file:line) and how to fix it."""


class PartialEmbeddingError(BenchError):
    """An ``embed`` call failed after some of its batches were answered (and billed).

    ``positions`` are the input rows that did come back and ``vectors`` their normalised rows, so
    a caller such as the cache can keep them before passing the error on; the message is the
    failure's own one line.
    """

    def __init__(self, message: str, positions: np.ndarray, vectors: np.ndarray) -> None:
        super().__init__(message)
        self.positions = positions
        self.vectors = vectors
