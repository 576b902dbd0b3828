"""WebNN mappings: averagePool2d, l2Pool2d, maxPool2d (§7.7.32), resample2d (§7.7.36).

Defaults (global window, zero padding, unit strides and dilations, "nchw", "floor") are the nn
attributes' defaults; every validation step lives in the nn type rules.
"""
from estuary.importers.webnn.ops import OPS

_OPTIONS = {"windowDimensions": "window_dimensions", "padding": "padding", "strides": "strides",
            "dilations": "dilations", "layout": "layout", "roundingType": "rounding_type",
            "outputSizes": "output_sizes"}
# later spec revisions rename roundingType to outputShapeRounding; both spellings are accepted
_ROUNDING_ALIAS = "outputShapeRounding"


def _pool(nn_name):
    def fn(c, input, options):
        attrs = {attr: options.get(js) for js, attr in _OPTIONS.items()}
        if _ROUNDING_ALIAS in options:
            c.check("roundingType" not in options, f"give roundingType or {_ROUNDING_ALIAS}, not both")
            attrs["rounding_type"] = options[_ROUNDING_ALIAS]
        return c.op(nn_name, [input], **attrs)
    return fn


for _js, _nn in {"averagePool2d": "average_pool2d", "l2Pool2d": "l2_pool2d", "maxPool2d": "max_pool2d"}.items():
    OPS.op(_js, params=["input", "options"], operands=["input"], options=[*_OPTIONS, _ROUNDING_ALIAS])(_pool(_nn))


@OPS.op("resample2d", params=["input", "options"], operands=["input"], options=["mode", "scales", "sizes", "axes"])
def resample2d(c, input, options):
    return c.op("resample2d", [input], mode=options.get("mode"), scales=options.get("scales"),
                sizes=options.get("sizes"), axes=options.get("axes"))
