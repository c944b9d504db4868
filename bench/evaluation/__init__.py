"""Evaluation: relevance, metrics, span metrics, diagnostics, significance, costs and findings."""
