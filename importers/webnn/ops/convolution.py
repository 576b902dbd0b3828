"""WebNN mappings: conv2d, convTranspose2d."""
from estuary.importers.webnn.ops import OPS

_LIST = "sequence<unsigned long>"
# option -> (nn attribute, WebIDL member); the bias operand is the nn op's third operand
_COMMON = {"padding": ("padding", _LIST), "strides": ("strides", _LIST), "dilations": ("dilations", _LIST),
           "groups": ("groups", "unsigned long = 1"), "inputLayout": ("input_layout", 'MLInputOperandLayout = "nchw"')}
_CONV = dict(_COMMON, filterLayout=("filter_layout", 'MLConv2dFilterOperandLayout = "oihw"'))
_TRANSPOSE = dict(_COMMON, filterLayout=("filter_layout", 'MLConvTranspose2dFilterOperandLayout = "iohw"'),
                  outputPadding=("output_padding", _LIST), outputSizes=("output_sizes", _LIST))
_PARAMS = {"input": "MLOperand", "filter": "MLOperand"}


def _members(table):
    return {**{js: member for js, (_, member) in table.items()}, "bias": "MLOperand"}


def _attrs(options, table):
    return {attr: options.get(js) for js, (attr, _) in table.items()}


@OPS.op("conv2d", params=_PARAMS, options=_members(_CONV))
def conv2d(c, input, filter, options):
    return c.op("conv2d", [input, filter, options.get("bias")], **_attrs(options, _CONV))


@OPS.op("convTranspose2d", params=_PARAMS, options=_members(_TRANSPOSE))
def conv_transpose2d(c, input, filter, options):
    return c.op("conv_transpose2d", [input, filter, options.get("bias")], **_attrs(options, _TRANSPOSE))
