"""WebNN mappings: averagePool2d, l2Pool2d, maxPool2d (§7.7.32), resample2d (§7.7.36).

Defaults (global window, zero padding, unit strides and dilations, "nchw", "floor") are the nn
attributes' defaults, the spec's (the registrations state those the spec's IDL gives); every
validation step lives in the nn type rules.
"""
from estuary.importers.webnn.ops import OPS

_LIST = "sequence<unsigned long>"
# option -> (nn attribute, WebIDL member)
_OPTIONS = {"windowDimensions": ("window_dimensions", _LIST), "padding": ("padding", _LIST),
            "strides": ("strides", _LIST), "dilations": ("dilations", _LIST),
            "layout": ("layout", 'MLInputOperandLayout = "nchw"'),
            "roundingType": ("rounding_type", 'MLRoundingType = "floor"'), "outputSizes": ("output_sizes", _LIST)}
# later spec revisions rename roundingType to outputShapeRounding; both spellings are accepted
_ROUNDING_ALIAS = "outputShapeRounding"
_MEMBERS = {**{js: member for js, (_, member) in _OPTIONS.items()}, _ROUNDING_ALIAS: "MLRoundingType"}


def _pool(nn_name):
    def fn(c, input, options):
        attrs = {attr: options.get(js) for js, (attr, _) in _OPTIONS.items()}
        if _ROUNDING_ALIAS in options:
            c.check("roundingType" not in options, f"give roundingType or {_ROUNDING_ALIAS}, not both")
            attrs["rounding_type"] = options[_ROUNDING_ALIAS]
        return c.op(nn_name, [input], **attrs)
    return fn


for _js, _nn in {"averagePool2d": "average_pool2d", "l2Pool2d": "l2_pool2d", "maxPool2d": "max_pool2d"}.items():
    OPS.op(_js, params={"input": "MLOperand"}, options=_MEMBERS)(_pool(_nn))


@OPS.op("resample2d", params={"input": "MLOperand"},
        options={"mode": 'MLInterpolationMode = "nearest-neighbor"', "scales": "sequence<float>",
                 "sizes": "sequence<unsigned long>", "axes": "sequence<unsigned long>"})
def resample2d(c, input, options):
    return c.op("resample2d", [input], mode=options.get("mode"), scales=options.get("scales"),
                sizes=options.get("sizes"), axes=options.get("axes"))
