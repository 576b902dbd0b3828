"""WebNN mappings: conv2d, convTranspose2d."""
from estuary.importers.webnn.registry import webnn_op

_COMMON = {"padding": "padding", "strides": "strides", "dilations": "dilations", "groups": "groups",
           "inputLayout": "input_layout", "filterLayout": "filter_layout"}


def _attrs(options, names):
    return {attr: options.get(js) for js, attr in names.items()}


@webnn_op("conv2d", ["input", "filter", "options"], operands=["input", "filter"],
          options=list(_COMMON), option_operands=["bias"])
def conv2d(c, input, filter, options):
    return c.op("conv2d", [input, filter, options.get("bias")], **_attrs(options, _COMMON))


_TRANSPOSE = dict(_COMMON, outputPadding="output_padding", outputSizes="output_sizes")


@webnn_op("convTranspose2d", ["input", "filter", "options"], operands=["input", "filter"],
          options=list(_TRANSPOSE), option_operands=["bias"])
def conv_transpose2d(c, input, filter, options):
    return c.op("conv_transpose2d", [input, filter, options.get("bias")], **_attrs(options, _TRANSPOSE))
