"""The nn op declarations, one module per op family (dialects/ops/<family>.py); `core.OPS.load()`
imports them all. An op's family is the name of the module that declares it, and the lowering
rules (passes/lowering/<family>.py) and the lit and numeric tests (lit/*/<family>.mlir,
tests/ops/test_<family>.py) follow the same names.
"""
