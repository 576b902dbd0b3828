"""Declarations: Table lookups and hashing: hashtable lookup, LSH projection."""
