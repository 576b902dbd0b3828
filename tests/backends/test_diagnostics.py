"""IREE's diagnostics name the model's layers (backends/invoke.py `layers_of`), not MLIR locations."""
from estuary.backends.invoke import layers_of


def test_one_layer():
    loc = 'loc(callsite("input_37"("/m/model.mlpackage":0:0) at "/m/model.mlpackage":0:0))'
    assert layers_of(loc) == "layer 'input_37'"


def test_fused_layers_in_order_without_repeats():
    loc = ('loc(fused[callsite("where_45"("/m.json":0:0) at "/m.json":0:0), callsite("isNaN_44"("/m.json":0:0) '
           'at "/m.json":0:0), callsite("where_45"("/m.json":0:0) at "/m.json":0:0)])')
    assert layers_of(loc) == "layers 'where_45', 'isNaN_44'"


def test_a_location_without_a_layer_stays_as_it_is():
    assert layers_of("loc(unknown)") == "loc(unknown)"
    assert layers_of('loc("/m.json":0:0)') == 'loc("/m.json":0:0)'
