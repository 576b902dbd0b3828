"""WebNN JSON with dynamic dimensions (MLDynamicDimension): inputs' {"name", "maxSize"} entries,
{"name"} / {"expression"} in reshape, expand and slice, the imported types, one artefact run at
several lengths against onnxruntime (an ONNX graph with the dim_param "seq"), and the errors."""
import json

import numpy as np
import pytest

import estuary
from estuary.base.errors import EstuaryError, RuntimeInputError
from estuary.importers.webnn import load_graph
from helpers import graph, op
import transformer_oracle as oracle

SEQ = {"name": "seq", "maxSize": 128}


def _f32(*shape):
    return (list(shape), "float32")


def _types(doc):
    nn = load_graph(doc)
    try:
        return {n: str(s) for n, s in nn.inputs + nn.outputs}, nn.signature().get("dims")
    finally:
        nn.close()


def test_input_symbols_and_shape_arguments_become_nn_types():
    doc = graph({"x": _f32(1, SEQ, 16), "input.2": _f32({"maxSize": 8}, 16)}, [
        op("reshape", ("input", "x"), ("newShape", [1, {"name": "seq"}, 2, 8]), outputs="r"),
        op("transpose", ("input", "r"), outputs="t", permutation=[0, 2, 1, 3]),
        op("reshape", ("input", "t"), ("newShape", [1, {"expression": "2*seq"}, 8]), outputs="u"),
        op("slice", ("input", "u"), ("starts", [0, 1, 0]), ("sizes", [1, {"expression": "2*seq - 1"}, 8]), outputs="s"),
        op("expand", ("input", "input.2"), ("newShape", [2, {"name": "input_2_0"}, 16]), outputs="e"),
    ], ["u", "s", "e"])
    types, dims = _types(doc)
    assert types == {"x": "float32[1, seq, 16]", "input.2": "float32[input_2_0, 16]", "u": "float32[1, 2*seq, 8]",
                     "s": "float32[1, 2*seq - 1, 8]", "e": "float32[2, input_2_0, 16]"}
    assert dims == {"symbols": {"input_2_0": [1, 8], "seq": [1, 128]}, "rules": []}


def test_a_name_in_two_inputs_is_one_symbol_and_meeting_symbols_unify():
    doc = graph({"a": _f32(1, SEQ), "b": _f32(1, SEQ), "m": _f32(1, {"name": "mlen", "maxSize": 128})}, [
        op("add", ("a", "a"), ("b", "b"), outputs="s"), op("mul", ("a", "s"), ("b", "m"), outputs="y")], ["y"])
    types, dims = _types(doc)
    assert types["y"] == "float32[1, seq]"
    assert dims == {"symbols": {"mlen": [1, 128], "seq": [1, 128]}, "rules": ["mlen = seq; seq=1..128"]}
    doc["operators"].append(op("reshape", ("input", "y"), ("newShape", [{"name": "mlen"}]), outputs="z"))
    doc["outputs"] = ["z"]  # a shape argument naming a bound symbol reads as its representative
    assert _types(doc)[0]["z"] == "float32[seq]"


def _block(heads):
    """The oracle's block as WebNN JSON (constants inline), x and mask sharing the symbol seq."""
    dh = oracle.D // heads
    seq = {"name": "seq"}
    ops = [op("layerNormalization", ("input", "x"), outputs="h", axes=[2], scale="ln1_g", bias="ln1_b", epsilon=1e-5)]
    for k in "qkv":
        ops += [op("matmul", ("a", "h"), ("b", f"w{k}"), outputs=f"{k}0"), op("add", ("a", f"{k}0"), ("b", f"b{k}"), outputs=k)]
        if heads > 1:
            ops += [op("reshape", ("input", k), ("newShape", [1, seq, heads, dh]), outputs=f"{k}4"),
                    op("transpose", ("input", f"{k}4"), outputs=f"{k}h", permutation=[0, 2, 1, 3])]
        else:
            ops.append(op("identity", ("input", k), outputs=f"{k}h"))
    ops += [
        op("transpose", ("input", "kh"), outputs="kt", permutation=[0, 1, 3, 2] if heads > 1 else [0, 2, 1]),
        op("matmul", ("a", "qh"), ("b", "kt"), outputs="s0"), op("mul", ("a", "s0"), ("b", "scale"), outputs="s1"),
        op("reshape", ("input", "mask"), ("newShape", [1, 1, 1, seq] if heads > 1 else [1, 1, seq]), outputs="m4"),
        op("add", ("a", "s1"), ("b", "m4"), outputs="s2"),
        op("softmax", ("input", "s2"), ("axis", 3 if heads > 1 else 2), outputs="a"),
        op("matmul", ("a", "a"), ("b", "vh"), outputs="ctx_h")]
    if heads > 1:
        ops += [op("transpose", ("input", "ctx_h"), outputs="ctx_t", permutation=[0, 2, 1, 3]),
                op("reshape", ("input", "ctx_t"), ("newShape", [1, seq, oracle.D]), outputs="ctx")]
    else:
        ops.append(op("identity", ("input", "ctx_h"), outputs="ctx"))
    ops += [
        op("matmul", ("a", "ctx"), ("b", "wo"), outputs="o0"), op("add", ("a", "o0"), ("b", "bo"), outputs="o1"),
        op("add", ("a", "x"), ("b", "o1"), outputs="y1"),
        op("layerNormalization", ("input", "y1"), outputs="h2", axes=[2], scale="ln2_g", bias="ln2_b", epsilon=1e-5),
        op("matmul", ("a", "h2"), ("b", "w1"), outputs="u0"), op("add", ("a", "u0"), ("b", "b1"), outputs="u1"),
        op("gelu", ("input", "u1"), outputs="u2"),
        op("matmul", ("a", "u2"), ("b", "w2"), outputs="m0"), op("add", ("a", "m0"), ("b", "b2"), outputs="m1"),
        op("add", ("a", "y1"), ("b", "m1"), outputs="y")]
    constants = {**oracle.weights(), "scale": np.float32(1 / np.sqrt(dh))}
    return graph({"x": _f32(1, SEQ, oracle.D), "mask": _f32(1, SEQ)}, ops, ["y"], constants)


@pytest.mark.parametrize("heads", [1, 4])
def test_transformer_block_one_artefact_every_length(tmp_path, heads):
    path = tmp_path / "block.json"
    path.write_text(json.dumps(_block(heads)))
    model = estuary.load(estuary.compile(str(path)))
    assert model.inputs == [("x", (1, "seq", oracle.D), "float32"), ("mask", (1, "seq"), "float32")]
    assert model.dims == {"seq": (1, 128)}
    sess = oracle.session(oracle.weights(), heads)
    for n in (1, 7, 64, 128):
        feeds = oracle.feeds(n)
        got = model.run(feeds)["y"]
        assert got.shape == (1, n, oracle.D)
        np.testing.assert_allclose(got, sess.run(["y"], feeds)[0], rtol=1e-4, atol=1e-4, err_msg=f"seq = {n}")


def test_run_time_shapes_are_checked(tmp_path):
    doc = graph({"a": _f32(1, SEQ), "m": _f32(1, {"name": "mlen", "maxSize": 128})},
                [op("add", ("a", "a"), ("b", "m"))], ["y"])
    model = estuary.load(estuary.compile(doc))
    ones = np.ones((1, 5), np.float32)
    np.testing.assert_array_equal(model.run({"a": ones, "m": ones})["y"], 2 * ones)
    with pytest.raises(RuntimeInputError, match=r"input 'a' dimension 1 \(seq\) is 129, outside its bounds 1\.\.128"):
        model.run({"a": np.ones((1, 129), np.float32), "m": np.ones((1, 129), np.float32)})
    with pytest.raises(RuntimeInputError, match=r"\(mlen\) is 6, but the model needs mlen = seq = 5"):
        model.run({"a": ones, "m": np.ones((1, 6), np.float32)})


@pytest.mark.parametrize("shape,constant,message", [
    ([1, {"name": "seq", "maxSize": 0}], False, "input 'x': dimension 1 (seq): maxSize must be a positive integer"),
    ([1, {"name": "seq"}], False, "input 'x': dimension 1 (seq): maxSize must be a positive integer, got None"),
    ([1, {"name": "2seq", "maxSize": 4}], False, "input 'x': dimension 1: the name '2seq' is not an identifier"),
    ([1, {"name": "seq", "maxSize": 4, "min": 1}], False, "input 'x': dimension 1 has unknown key(s) ['min']"),
    ([1, "seq"], False, "operand 'x' has an invalid shape [1, 'seq'] (a list of positive integers; a dynamic "
                        "dimension is {\"name\": ..., \"maxSize\": ...})"),
    ([1, {"name": "seq", "maxSize": 4}], True, "constant 'x' has the dynamic shape"),
])
def test_invalid_input_dimensions(shape, constant, message):
    doc = graph({"x": (shape, "float32")}, [op("relu", ("input", "x"))], ["y"])
    if constant:
        doc["inputs"]["x"].update(constant=True, data=[0.0])
    with pytest.raises(EstuaryError) as e:
        load_graph(doc)
    assert message in str(e.value) and "<webnn graph>" in str(e.value)


def test_a_name_keeps_its_max_size_across_inputs():
    doc = graph({"a": _f32(1, SEQ), "b": _f32(1, {"name": "seq", "maxSize": 64})},
                [op("add", ("a", "a"), ("b", "b"))], ["y"])
    with pytest.raises(EstuaryError, match=r"input 'b': dimension 1 is seq with maxSize 64, but an earlier input "
                                           r"gave seq the maxSize 128"):
        load_graph(doc)


@pytest.mark.parametrize("operator,message", [
    (op("reshape", ("input", "x"), ("newShape", [1, {"name": "len"}])),
     "newShape[1] names 'len', which no input declares (declared: seq)"),
    (op("reshape", ("input", "x"), ("newShape", [1, {"name": "2*seq"}])),
     "(an expression is written {\"expression\": ...})"),
    (op("reshape", ("input", "x"), ("newShape", [1, {"expression": "seq +"}])), "newShape[1]: cannot read dimension"),
    (op("reshape", ("input", "x"), ("newShape", [1, {"expression": "2*seq"}])),
     "new_shape [1, 2*seq] has 2*seq elements, the input has seq"),
    (op("slice", ("input", "x"), ("starts", [0, 1]), ("sizes", [1, {"name": "seq"}])),
     "window 1..seq + 1 of dimension 1 exceeds its size seq"),
    (op("split", ("input", "x"), ("splits", 2), axis=1), "axis 1 is the dynamic dimension seq; split needs a fixed"),
    (op("pad", ("input", "x"), ("beginningPadding", [0, {"name": "seq"}]), ("endingPadding", [0, 0])),
     "beginningPadding must be a list of integers"),
    (op("gru", ("input", "x3"), ("weight", "w"), ("recurrentWeight", "r"), ("steps", 1), ("hiddenSize", 1)),
     "nn.gru does not take dynamic dimensions: operand 'input' is float32[seq, 1, 2]"),
])
def test_invalid_dynamic_operations_name_the_operation(operator, message):
    doc = graph({"x": _f32(1, SEQ), "x3": _f32(SEQ, 1, 2)}, [operator], ["y"],
                {"w": np.zeros((1, 3, 2), np.float32), "r": np.zeros((1, 3, 1), np.float32)})
    with pytest.raises(EstuaryError) as e:
        load_graph(doc)
    assert message in str(e.value) and f"({operator['name']})" in str(e.value), str(e.value)
