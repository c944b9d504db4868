"""bench.report: terminal tables, plots, the PDF, the inspector page and report jobs."""
