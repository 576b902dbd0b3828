"""Typed Python views of `nn` ops, so passes read `op.strides` rather than raw attributes."""
from iree.compiler import ir
from iree.compiler.dialects._ods_common import _cext

from estuary.dialects import core, graph


@_cext.register_dialect
class NNDialect(ir.Dialect):
    DIALECT_NAMESPACE = "nn"


class NNOpView(ir.OpView):
    """Common base: `.opdef`, `.attrs` (all declared attributes), `.grouped_operands`."""

    OPDEF = None
    _ODS_REGIONS = (0, True)

    @property
    def opdef(self):
        return self.OPDEF

    @property
    def attrs(self):
        return graph.op_attrs(self.OPDEF, self.operation)

    @property
    def grouped_operands(self):
        return graph.operand_groups(self.OPDEF, self.operation)

    @property
    def layer_name(self):
        return graph.loc_name(self.operation)


def _attr_property(name, kind):
    def get(self):
        attrs = self.operation.attributes
        if name in attrs:
            return kind.from_mlir(attrs[name])
        return None if kind.default is core.REQUIRED else kind.default

    return property(get, doc=kind.doc or None)


def _operand_property(index):
    return property(lambda self: self.grouped_operands[index])


_RESERVED = set(dir(ir.OpView)) | {"opdef", "attrs", "grouped_operands", "layer_name"}


def _view_class(opdef):
    clash = (set(opdef.operand_names) | set(opdef.attrs)) & _RESERVED
    if clash:
        raise ValueError(f"nn.{opdef.name}: operand/attribute names {sorted(clash)} clash with OpView members")
    ns = {"OPERATION_NAME": opdef.full_name, "OPDEF": opdef, "__doc__": opdef.doc}
    for i, name in enumerate(opdef.operand_names):
        ns[name] = _operand_property(i)
    for name, kind in opdef.attrs.items():
        ns[name] = _attr_property(name, kind)
    cls_name = "".join(p.capitalize() for p in opdef.name.split("_")) + "Op"
    return type(cls_name, (NNOpView,), ns)


VIEWS = {}


def register_views():
    """Register a view class for every declared op not yet registered."""
    for name, opdef in core.REGISTRY.items():
        if name not in VIEWS:
            VIEWS[name] = _cext.register_operation(NNDialect)(_view_class(opdef))
