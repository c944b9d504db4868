"""Everything a person reads: terminal tables now; plots, PDF and HTML build on the same summary."""
