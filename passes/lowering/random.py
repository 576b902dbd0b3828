"""Lowering rules: Random-number ops with explicit seeds."""
