"""WebNN mappings: batchNormalization, instanceNormalization, layerNormalization."""
from estuary.importers.webnn.ops import OPS


@OPS.op("batchNormalization", params={"input": "MLOperand", "mean": "MLOperand", "variance": "MLOperand"},
        options={"scale": "MLOperand", "bias": "MLOperand", "axis": "unsigned long = 1", "epsilon": "double = 1e-5"})
def batch_normalization(c, input, mean, variance, options):
    return c.op("batch_normalization", [input, mean, variance, options.get("scale"), options.get("bias")],
                axis=options.get("axis"), epsilon=options.get("epsilon"))


@OPS.op("instanceNormalization", params={"input": "MLOperand"},
        options={"scale": "MLOperand", "bias": "MLOperand", "epsilon": "double = 1e-5",
                 "layout": 'MLInputOperandLayout = "nchw"'})
def instance_normalization(c, input, options):
    return c.op("instance_normalization", [input, options.get("scale"), options.get("bias")],
                epsilon=options.get("epsilon"), layout=options.get("layout"))


@OPS.op("layerNormalization", params={"input": "MLOperand"},
        options={"scale": "MLOperand", "bias": "MLOperand", "axes": "sequence<unsigned long>", "epsilon": "double = 1e-5"})
def layer_normalization(c, input, options):
    axes = options.get("axes")
    if axes is None:  # the spec's default: every dimension but the first (none for rank <= 1)
        axes = list(range(1, c.spec(input).rank))
    return c.op("layer_normalization", [input, options.get("scale"), options.get("bias")],
                axes=axes, epsilon=options.get("epsilon"))
