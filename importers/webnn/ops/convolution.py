"""WebNN mappings: conv2d, convTranspose2d."""
from estuary.importers.webnn.ops import OPS

_COMMON = {"padding": "padding", "strides": "strides", "dilations": "dilations", "groups": "groups",
           "inputLayout": "input_layout", "filterLayout": "filter_layout"}


def _attrs(options, names):
    return {attr: options.get(js) for js, attr in names.items()}


@OPS.op("conv2d", params=["input", "filter", "options"], operands=["input", "filter"],
          options=list(_COMMON), option_operands=["bias"])
def conv2d(c, input, filter, options):
    return c.op("conv2d", [input, filter, options.get("bias")], **_attrs(options, _COMMON))


_TRANSPOSE = dict(_COMMON, outputPadding="output_padding", outputSizes="output_sizes")


@OPS.op("convTranspose2d", params=["input", "filter", "options"], operands=["input", "filter"],
          options=list(_TRANSPOSE), option_operands=["bias"])
def conv_transpose2d(c, input, filter, options):
    return c.op("conv_transpose2d", [input, filter, options.get("bias")], **_attrs(options, _TRANSPOSE))
