"""The HTTP plumbing of OpenAI-compatible clients lives in ``bench.llm.http_api``; this name stays while
the embedding and reranking clients and the dry run still import it from here."""

from bench.llm.http_api import *  # noqa: F403
