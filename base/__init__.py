"""The ground layer: what every other layer needs and that needs nothing of ours.

errors (the one exception hierarchy), dtypes (WebNN names <-> numpy <-> MLIR element types),
integrity (the .vmfb seal and signature schema), options (CompileOptions, plain data), registry
(the one registration primitive) and dims (symbolic dimensions: expressions, bounds, the
Unifier). Nothing here imports another estuary package; tests/project/test_layering.py checks it.
"""
