"""WebNN mappings: batchNormalization, instanceNormalization, layerNormalization."""
from estuary.importers.webnn.ops import OPS


@OPS.op("batchNormalization", params=["input", "mean", "variance", "options"], operands=["input", "mean", "variance"],
          options=["axis", "epsilon"], option_operands=["scale", "bias"])
def batch_normalization(c, input, mean, variance, options):
    return c.op("batch_normalization", [input, mean, variance, options.get("scale"), options.get("bias")],
                axis=options.get("axis"), epsilon=options.get("epsilon"))


@OPS.op("instanceNormalization", params=["input", "options"], operands=["input"], options=["epsilon", "layout"],
          option_operands=["scale", "bias"])
def instance_normalization(c, input, options):
    return c.op("instance_normalization", [input, options.get("scale"), options.get("bias")],
                epsilon=options.get("epsilon"), layout=options.get("layout"))


@OPS.op("layerNormalization", params=["input", "options"], operands=["input"], options=["axes", "epsilon"],
          option_operands=["scale", "bias"])
def layer_normalization(c, input, options):
    axes = options.get("axes")
    if axes is None:  # the spec's default: every dimension but the first (none for rank <= 1)
        axes = list(range(1, c.spec(input).rank))
    return c.op("layer_normalization", [input, options.get("scale"), options.get("bias")],
                axes=axes, epsilon=options.get("epsilon"))
