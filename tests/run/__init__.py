"""bench.run: the shootout over the candidate grid, dry runs, interruptions."""
