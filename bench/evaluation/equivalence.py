"""Equivalence: two one-sided tests (TOST) that a paired mean difference lies within ±margin.

"Not significantly different" is not "the same": on few questions nothing is significant. A
candidate is *equivalent* to the best only when the goldset shows its mean differs by less than a
stated margin: both one-sided paired t-tests, that the difference is above −margin and below
+margin, reject at alpha. Where the goldset shows neither a difference nor equivalence, the
comparison is *undecided*, and the questions that would decide it are estimated.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def tost_p(d: np.ndarray, margin: float) -> float:
    """The TOST p-value that the mean of the paired differences ``d`` lies within ±``margin``: the
    larger of the two one-sided paired t-tests' p. Differences all equal: 0 when inside the margin,
    1 otherwise; fewer than 2 questions, or no margin: 1 (equivalence cannot be shown), except for
    differences all zero, which are the same system."""
    d = np.round(np.asarray(d, dtype=float), 12)
    n = len(d)
    if n and not d.any():
        return 0.0
    if n < 2 or margin <= 0:
        return 1.0
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0:
        return 0.0 if abs(mean) < margin else 1.0
    se = sd / math.sqrt(n)
    above = float(stats.t.sf((mean + margin) / se, n - 1))  # H0: mean <= -margin
    below = float(stats.t.cdf((mean - margin) / se, n - 1))  # H0: mean >= +margin
    return max(above, below)


def questions_for_equivalence(
    mean_diff: float, sd_diff: float, margin: float, alpha: float = 0.05, power: float = 0.8
) -> int | None:
    """Questions at which TOST shows equivalence within ±``margin`` with ``power``, were the true mean
    difference ``mean_diff``: ``n = ((z(1 − alpha) + z(1 − (1 − power)/2)) × sd / (margin − |mean|))²``
    (at least 2); None when ``|mean_diff|`` is not inside the margin (no number of such questions
    shows it)."""
    room = margin - abs(mean_diff)
    if room <= 0 or not math.isfinite(room):
        return None
    if sd_diff == 0:
        return 2
    z = float(stats.norm.ppf(1 - alpha) + stats.norm.ppf(1 - (1 - power) / 2))
    return max(2, math.ceil((z * sd_diff / room) ** 2 - 1e-9))
