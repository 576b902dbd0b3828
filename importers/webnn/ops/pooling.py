"""WebNN mappings: averagePool2d, l2Pool2d, maxPool2d."""
from estuary.importers.webnn.registry import webnn_op

_OPTIONS = {"windowDimensions": "window_dimensions", "padding": "padding", "strides": "strides",
            "dilations": "dilations", "layout": "layout", "roundingType": "rounding_type",
            "outputSizes": "output_sizes"}


def _pool(nn_name):
    def fn(c, input, options):
        return c.op(nn_name, [input], **{attr: options.get(js) for js, attr in _OPTIONS.items()})
    return fn


for _js, _nn in {"averagePool2d": "average_pool2d", "l2Pool2d": "l2_pool2d", "maxPool2d": "max_pool2d"}.items():
    webnn_op(_js, ["input", "options"], operands=["input"], options=list(_OPTIONS))(_pool(_nn))
