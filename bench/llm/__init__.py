"""Asking chat models, for every use of one (drafting a goldset, generating and judging answers):
settings.py (ChatSettings: the model, its key, prices, budget and how it is asked), client.py (the
OpenAI-compatible chat-completions client, retries, replies and their usage), asking.py (requests
sent at once within a budget, read in planned order), replies.py (the reply log a rerun resumes from,
the Tally of calls, tokens and cost) and prompts.py (prompts and rubrics as versioned files)."""
