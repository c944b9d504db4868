"""Everything a person reads, from the run's typed values (``bench.results.schema``).

writer.py (every report file of a run), terminal.py and history_tables.py (tables for the terminal),
plots.py (the plots by name, drawn and written) with plot_base.py, plot_quality.py and plot_tradeoff.py,
pdf.py (report.pdf), inspector.py with static/ (inspector.html), jobs.py (reports drawn on the other cores).
"""
