"""Stage 4: the dispatch compiler — generated modules that choose on every call."""
