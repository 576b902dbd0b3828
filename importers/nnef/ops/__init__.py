"""NNEF operation converters, one module per op family; `OPS` maps an operation (primitive or
compound fragment) name to its converter (contract: importers/nnef/converter.py). `OPS.expand`
lists compound fragments supported by the loader's expansion of their bodies into primitives."""
from estuary.importers.registry import ImportRegistry

OPS = ImportRegistry("nnef")
