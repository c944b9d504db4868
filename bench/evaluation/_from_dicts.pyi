import numpy as np

def fill_grades(
    judged: list[dict], runs: list[dict], depth: int, ranked: np.ndarray, ideal: np.ndarray, n_relevant: np.ndarray
) -> bool: ...
