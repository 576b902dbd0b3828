"""llvm-cpu's lowering: its rules (rules.py: the generic rules with the CPU's forms, forms.py) and
the forms themselves, one module each (pointwise, winograd, im2col, matvec). Importing this
package registers the rules and declares the target to the lowering registry, so that llvm-cpu
is never lowered without them."""
from __future__ import annotations

from typing import Any

from estuary.backends.llvm_cpu.lowering import rules  # noqa: F401  (registers the llvm-cpu rules)
from estuary.backends.llvm_cpu.lowering.forms import WINOGRAD
from estuary.base.options import CompileOptions
from estuary.passes.lowering import register_target


def _start(options: CompileOptions) -> dict[str, Any]:
    """The side results llvm-cpu's lowering reports: the Winograd count with `cpu-winograd`."""
    return {WINOGRAD: 0} if options.winograd else {}


register_target("llvm-cpu", _start)
