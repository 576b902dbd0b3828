"""WebNN mappings: averagePool2d, l2Pool2d, maxPool2d, resample2d."""
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


@webnn_op("resample2d", ["input", "options"], operands=["input"], options=["mode", "scales", "sizes", "axes"])
def resample2d(c, input, options):
    return c.op("resample2d", [input], mode=options.get("mode"), scales=options.get("scales"),
                sizes=options.get("sizes"), axes=options.get("axes"))
