"""Lowering rules: Table lookups and hashing: hashtable lookup, LSH projection."""
