"""Text in every script, below every stage: which script a character is written in, how wide it
shows, where its grapheme clusters and words are, and which language a text is in."""
