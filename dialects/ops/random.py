"""Declarations: Random-number ops with explicit seeds."""
