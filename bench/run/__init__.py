"""Orchestration of a shootout: the candidate grid through chunking, embedding, retrieval and scoring."""
