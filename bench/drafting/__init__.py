"""Building a goldset: drafts of questions with candidate passages (pooled from several retrievers,
or written by a chat model with verified quotes), reviewed in the browser, written as a goldset."""
