"""Core ML layer converters, one module per op family; `OPS` maps a NeuralNetworkLayer oneof field
name to its converter (contract: importers/coreml/converter.py)."""
from estuary.importers.registry import ImportRegistry

OPS = ImportRegistry("coreml")
