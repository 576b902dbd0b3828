"""NNAPI operation converters, one module per op family; `OPS` maps an OperationCode to its
converter `fn(c, ins, outs)` (context: importers/nnapi/converter.py)."""
from estuary.importers.registry import ImportRegistry

OPS = ImportRegistry("nnapi")
