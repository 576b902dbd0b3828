"""Lowering rules: Further element-wise math ops (shared: append only, one declaration per op)."""
