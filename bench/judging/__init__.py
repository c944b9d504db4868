"""A relevance judge: a chat model grading the passages candidates retrieved that no person judged."""
