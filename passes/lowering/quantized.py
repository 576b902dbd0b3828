"""Lowering rules: Quantized (uint8 asymmetric) ops and quantize/dequantize conversions."""
