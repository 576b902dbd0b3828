"""Typed Python views of `nn` ops, so passes read `op.strides` rather than raw attributes."""
from __future__ import annotations

from typing import Any, ClassVar

from iree.compiler import ir
from iree.compiler.dialects._ods_common import _cext

from estuary.dialects import core, graph


@_cext.register_dialect
class NNDialect(ir.Dialect):
    DIALECT_NAMESPACE = "nn"


class NNOpView(ir.OpView):
    """Common base: `.opdef`, `.attrs` (all declared attributes), `.grouped_operands`."""

    OPDEF: ClassVar[core.OpDef]  # set on each generated view class (never instantiated without one)
    _ODS_REGIONS = (0, True)

    @property
    def opdef(self) -> core.OpDef:
        return self.OPDEF

    @property
    def attrs(self) -> dict[str, Any]:
        return graph.op_attrs(self.OPDEF, self.operation)

    @property
    def grouped_operands(self) -> list[ir.Value | list[ir.Value] | None]:
        return graph.operand_groups(self.OPDEF, self.operation)

    @property
    def layer_name(self) -> str | None:
        return graph.loc_name(self.operation)


def _attr_property(name: str, kind: core.AttrKind) -> property:
    def get(self: NNOpView) -> Any:
        attrs = self.operation.attributes
        if name in attrs:
            return kind.from_mlir(attrs[name])
        return None if kind.default is core.REQUIRED else kind.default

    return property(get, doc=kind.doc or None)


def _operand_property(index: int) -> property:
    return property(lambda self: self.grouped_operands[index])


_RESERVED = set(dir(ir.OpView)) | {"opdef", "attrs", "grouped_operands", "layer_name"}


def _view_class(opdef: core.OpDef) -> type[NNOpView]:
    clash = (set(opdef.operand_names) | set(opdef.attrs)) & _RESERVED
    if clash:
        raise ValueError(f"nn.{opdef.name}: operand/attribute names {sorted(clash)} clash with OpView members")
    ns: dict[str, Any] = {"OPERATION_NAME": opdef.full_name, "OPDEF": opdef, "__doc__": opdef.doc}
    for i, name in enumerate(opdef.operand_names):
        ns[name] = _operand_property(i)
    for name, kind in opdef.attrs.items():
        ns[name] = _attr_property(name, kind)
    cls_name = "".join(p.capitalize() for p in opdef.name.split("_")) + "Op"
    return type(cls_name, (NNOpView,), ns)


VIEWS: dict[str, type[NNOpView]] = {}


def register_views() -> None:
    """Register a view class for every declared op not yet registered."""
    for name, opdef in core.OPS.load().items():
        if name not in VIEWS:
            VIEWS[name] = _cext.register_operation(NNDialect)(_view_class(opdef))
