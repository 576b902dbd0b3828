"""WebNN mappings: gemm, matmul."""
from estuary.importers.webnn.ops import OPS


@OPS.op("gemm", params=["a", "b", "options"], operands=["a", "b"],
          options=["alpha", "beta", "aTranspose", "bTranspose"], option_operands=["c"])
def gemm(c, a, b, options):
    return c.op("gemm", [a, b, options.get("c")], alpha=options.get("alpha"), beta=options.get("beta"),
                a_transpose=options.get("aTranspose"), b_transpose=options.get("bTranspose"))


@OPS.op("matmul", params=["a", "b", "options"], operands=["a", "b"], options=[])
def matmul(c, a, b, options):
    return c.op("matmul", [a, b])
