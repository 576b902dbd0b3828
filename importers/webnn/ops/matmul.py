"""WebNN mappings: gemm, matmul."""
from estuary.importers.webnn.ops import OPS


@OPS.op("gemm", params={"a": "MLOperand", "b": "MLOperand"},
        options={"c": "MLOperand", "alpha": "double = 1", "beta": "double = 1", "aTranspose": "boolean = false",
                 "bTranspose": "boolean = false"})
def gemm(c, a, b, options):
    return c.op("gemm", [a, b, options.get("c")], alpha=options.get("alpha"), beta=options.get("beta"),
                a_transpose=options.get("aTranspose"), b_transpose=options.get("bTranspose"))


@OPS.op("matmul", params={"a": "MLOperand", "b": "MLOperand"}, options={})
def matmul(c, a, b, options):
    return c.op("matmul", [a, b])
