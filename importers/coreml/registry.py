"""The Core ML layer table: one converter per `NeuralNetworkLayer` oneof field name.

A converter is `fn(c, layer)`: `c` is the conversion context (importers/coreml/converter.py),
`layer` the NeuralNetworkLayer protobuf message (its parameters: `getattr(layer, layer.WhichOneof("layer"))`).
It returns the nn Value(s) of `layer.output`, in order (a single Value when there is one output).
"""
LAYERS = {}


def coreml_layer(*kinds):
    """Register the decorated function as the converter of the given layer kind(s)."""

    def wrap(fn):
        for kind in kinds:
            if kind in LAYERS:
                raise ValueError(f"Core ML layer {kind} registered twice")
            LAYERS[kind] = fn
        return fn

    return wrap
