"""The vocabulary every stage shares: measures as values, a run's records, and a candidate's figures
as typed sections. It imports nothing of bench but the foundation, so any stage may read it."""
