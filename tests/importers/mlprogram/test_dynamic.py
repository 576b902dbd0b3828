"""ML Programs with flexible input shapes (docs/dynamic-shapes.md, docs/mlprogram.md "Flexible
shapes"): RangeDim inputs become dynamic dimensions and the program's shape arithmetic folds on
them (importers/mlprogram/symbolic.py); EnumeratedShapes compile one function per shape, chosen
by `Model.run`; `shapes=` still fixes one static shape. The imported nn types are checked first,
then one artefact per model runs at several sizes against torch on CPU (torch_dynamic.py).
"""
import numpy as np
import pytest

import estuary
from estuary.base.errors import EstuaryError, ModelImportError, RuntimeInputError
from estuary.importers import import_model

torch = pytest.importorskip("torch")
pytest.importorskip("coremltools")
pytest.importorskip("transformers")

from . import torch_dynamic as models  # noqa: E402


def ct():
    import coremltools

    return coremltools


def types(nn):
    """{name: "dtype[shape]"} of a module's inputs and outputs."""
    return {n: str(s) for n, s in nn.inputs + nn.outputs}


def op_names(nn):
    return {op.operation.name for op in nn.main.regions[0].blocks[0].operations}


def assert_close(got, want, rtol):
    """Equal within `rtol` of the largest magnitude of `want` (as the other ML Program tests)."""
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=rtol * max(np.abs(want).max(), 1e-30))


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    return models.bert_package(tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    return models.cnn_package(tmp_path_factory.mktemp("cnn"))


# ---------------------------------------------------------------- what the import produces


def test_bert_lengths_are_symbols_unified_where_they_meet(bert):
    nn = import_model(bert[0])
    try:
        assert types(nn) == {"input_ids": "int32[1, input_ids_1]", "attention_mask": "int32[1, attention_mask_1]",
                             "hidden": "float32[1, input_ids_1, 64]", "pooled": "float32[1, 64]"}
        assert nn.signature()["dims"] == {"symbols": {"attention_mask_1": [1, 512], "input_ids_1": [1, 512]},
                                          "rules": ["attention_mask_1 = input_ids_1; input_ids_1=1..512"]}
    finally:
        nn.close()


def test_shapes_still_fix_a_static_shape(bert):
    nn = import_model(bert[0], shapes={"input_ids": [1, 7], "attention_mask": [1, 7]})
    try:
        assert types(nn)["hidden"] == "float32[1, 7, 64]" and "dims" not in nn.signature()
        assert "nn.dims_value" not in op_names(nn)  # the shape arithmetic folded to numbers
    finally:
        nn.close()
    with pytest.raises(ModelImportError, match="outside the model's shape ranges"):
        import_model(bert[0], shapes={"input_ids": [1, 513]})


def test_llama_states_stay_static_and_lengths_unify(tmp_path):
    path, _ = models.llama_package(tmp_path, "fp32")
    nn = import_model(path)
    try:
        assert types(nn) == {"inputIds": "int32[1, inputIds_1]",
                             "causalMask": "float32[1, 1, causalMask_2, causalMask_3]",
                             "keyCache": "float16[2, 1, 2, 64, 16]", "valueCache": "float16[2, 1, 2, 64, 16]",
                             "logits": "float32[1, inputIds_1, 100]"}
        sig = nn.signature()
        assert sig["states"] == [["keyCache", [2, 1, 2, 64, 16], "float16"], ["valueCache", [2, 1, 2, 64, 16], "float16"]]
        assert sig["dims"]["rules"] == ["causalMask_2 = inputIds_1; inputIds_1=1..64"]
        # the write position end - new and the positions begin .. end are run-time data
        assert "nn.dims_value" in op_names(nn)
    finally:
        nn.close()


def test_cnn_sizes_are_expressions_of_h_and_w(cnn):
    nn = import_model(cnn[0])
    try:
        assert types(nn) == {"x": "float32[1, 3, x_2, x_3]", "y": "float32[1, 8, 2*(((x_2 + 1)//2)//2), "
                                                                   "2*(((x_3 + 1)//2)//2)]",
                             "logits": "float32[1, 5]"}
        assert nn.signature()["dims"]["symbols"] == {"x_2": [8, 128], "x_3": [8, 128]}
    finally:
        nn.close()


def _shape_program(tmp_path):
    """A MIL program doing shape arithmetic on a RangeDim length n: a concat of scalars into a
    reshape target with -1, a slice up to n, range_1d(0, n) used as data, fill to [n, 1], and
    tile's repetitions as a real_div of two shapes (the torch frontend's `expand`)."""
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import get_new_symbol

    c = ct()

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, get_new_symbol(), 8))], opset_version=c.target.iOS17)
    def prog(x):
        n = mb.gather(x=mb.shape(x=x), indices=1, axis=0)
        r = mb.reshape(x=x, shape=mb.concat(values=[np.int32(1), n, np.int32(-1), np.int32(2)], axis=0))
        head = mb.slice_by_index(x=np.arange(64, dtype=np.float32).reshape(1, 64), begin=[0, 0],
                                 end=mb.concat(values=[np.int32(1), n], axis=0))  # [1, n]
        pos = mb.cast(x=mb.range_1d(start=np.int32(0), end=n, step=np.int32(1)), dtype="fp32")  # [n]
        row = mb.reshape(x=pos, shape=[1, -1])
        reps = mb.real_div(x=mb.concat(values=[n, n], axis=0), y=mb.shape(x=row))  # [n, 1]
        grid = mb.tile(x=row, reps=mb.cast(x=reps, dtype="int32"))  # [n, n]
        ones = mb.fill(shape=mb.concat(values=[n, np.int32(1)], axis=0), value=1.0)  # [n, 1]
        y = mb.add(x=mb.reduce_sum(x=r, axes=[2, 3]), y=mb.mul(x=head, y=pos), name="y")
        return y, mb.add(x=ones, y=grid, name="z")

    model = c.convert(prog, convert_to="mlprogram", minimum_deployment_target=c.target.iOS17,
                      compute_precision=c.precision.FLOAT32,
                      inputs=[c.TensorType(name="x", shape=(1, c.RangeDim(1, 32, default=3), 8))])
    path = str(tmp_path / "shapes.mlpackage")
    model.save(path)
    return path


def test_shape_arithmetic_folds_on_dynamic_dimensions(tmp_path):
    path = _shape_program(tmp_path)
    nn = import_model(path)
    try:
        assert types(nn) == {"x": "float32[1, x_1, 8]", "y": "float32[1, x_1]", "z": "float32[x_1, x_1]"}
    finally:
        nn.close()
    model = estuary.load(estuary.compile(path))
    for n in (1, 5, 32):
        x = np.random.default_rng(n).standard_normal((1, n, 8)).astype(np.float32)
        got = model.run({"x": x})
        pos = np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(got["y"], x.reshape(1, n, 4, 2).sum((2, 3)) + pos * pos, rtol=1e-6, atol=1e-5)
        np.testing.assert_array_equal(got["z"], np.broadcast_to(pos + 1, (n, n)))


# ---------------------------------------------------------------- one artefact, several sizes


def test_bert_one_artefact_for_every_length(bert):
    path, model = bert
    compiled = estuary.load(estuary.compile(path))
    assert compiled.dims == {"attention_mask_1": (1, 512), "input_ids_1": (1, 512)}
    rng = np.random.default_rng(5)
    for n in (1, 7, 64, 200, 512):
        ids = rng.integers(0, 100, (1, n)).astype(np.int32)
        mask = np.ones((1, n), np.int32)
        mask[0, max(1, n - n // 3):] = 0  # padding at the end
        got = compiled.run({"input_ids": ids, "attention_mask": mask})
        with torch.no_grad():
            hidden, pooled = model(torch.from_numpy(ids).long(), torch.from_numpy(mask))
        assert_close(got["hidden"], hidden.numpy(), 1e-4)
        assert_close(got["pooled"], pooled.numpy(), 1e-4)
    with pytest.raises(RuntimeInputError, match=r"'input_ids' dimension 1 \(input_ids_1\) is 513, outside its "
                                                r"bounds 1..512"):
        compiled.run({"input_ids": np.zeros((1, 513), np.int32), "attention_mask": np.ones((1, 513), np.int32)})
    with pytest.raises(RuntimeInputError, match="attention_mask"):  # the two lengths must agree
        compiled.run({"input_ids": np.zeros((1, 8), np.int32), "attention_mask": np.ones((1, 9), np.int32)})


# The keys and values written into the float16 caches are float16 in both (Estuary rounds a
# write to a float16 state, as torch's buffer stores it), so float32 programs agree to 1e-4.
LLAMA_RTOL = {"fp32": 1e-4, "fp16": 1e-2}


@pytest.mark.parametrize("precision, kv_heads", [("fp32", 2), ("fp32", 4), ("fp16", 2)])
def test_llama_prefill_then_decode_with_states(tmp_path, precision, kv_heads):
    path, model = models.llama_package(tmp_path, precision, kv_heads)
    compiled = estuary.load(estuary.compile(path))
    state = compiled.make_state()
    tokens = np.random.default_rng(0).integers(0, 100, 12).astype(np.int32)
    end = 0
    for new in (7, 1, 1, 1, 1, 1):  # a prompt of 7, then 5 tokens one at a time
        ids, mask = tokens[None, end:end + new], models.causal_mask(new, end + new)
        got = compiled.run({"inputIds": ids, "causalMask": mask}, state=state)["logits"]
        with torch.no_grad():
            want = model(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
        assert_close(got, want, LLAMA_RTOL[precision])
        end += new
    np.testing.assert_allclose(state.read("keyCache")[:, :, :, :end].astype(np.float32),
                               model.keyCache[:, :, :, :end].detach().float().numpy(), rtol=0, atol=2e-3)
    assert not state.read("keyCache")[:, :, :, end:].any()


def test_cnn_at_three_resolutions(cnn):
    path, model = cnn
    compiled = estuary.load(estuary.compile(path))
    for h, w in ((8, 8), (33, 17), (128, 96)):
        x = np.random.default_rng(h).standard_normal((1, 3, h, w)).astype(np.float32)
        got = compiled.run({"x": x})
        with torch.no_grad():
            y, logits = model(torch.from_numpy(x))
        assert_close(got["y"], y.numpy(), 1e-5)
        assert_close(got["logits"], logits.numpy(), 1e-5)
    with pytest.raises(RuntimeInputError, match=r"'x' dimension 2 \(x_2\) is 7, outside its bounds 8..128"):
        compiled.run({"x": np.zeros((1, 3, 7, 8), np.float32)})


def test_enumerated_shapes_one_function_each(tmp_path):
    """ct.EnumeratedShapes: a function per shape in one artefact (the default shape's is the
    default function); run picks the one the input's shape names, others are refused."""
    c = ct()

    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x, -1) * 2 + x.mean(1, keepdim=True) + torch.cumsum(x, 1)

    model = Model().eval()
    shapes = c.EnumeratedShapes(shapes=[(2, 5, 3), (1, 7, 3), (3, 4, 3)], default=(1, 7, 3))
    ml = c.convert(torch.jit.trace(model, torch.randn(1, 7, 3)), inputs=[c.TensorType(name="x", shape=shapes)],
                   convert_to="mlprogram", compute_precision=c.precision.FLOAT32)
    path = str(tmp_path / "enum.mlpackage")
    ml.save(path)
    compiled = estuary.load(estuary.compile(path))
    assert compiled.functions == ["main[x=1x7x3]", "main[x=2x5x3]", "main[x=3x4x3]"]
    assert compiled.default_function == "main[x=1x7x3]" and compiled.inputs == [("x", (1, 7, 3), "float32")]
    for shape in ((2, 5, 3), (1, 7, 3), (3, 4, 3)):
        x = torch.randn(*shape)
        got = compiled.run({"x": x.numpy()})
        np.testing.assert_allclose(next(iter(got.values())), model(x).numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeInputError, match=r"x \[2, 2, 3\] are not among .*x \[1, 7, 3\]; x \[2, 5, 3\]; "
                                                r"x \[3, 4, 3\]"):
        compiled.run({"x": np.zeros((2, 2, 3), np.float32)})
    static = import_model(path, shapes={"x": [3, 4, 3]})  # a fixed shape: one function, as before
    try:
        assert "functions" not in static.signature() and types(static)["x"] == "float32[3, 4, 3]"
    finally:
        static.close()


def test_an_op_without_dynamic_dimensions_names_the_operation(tmp_path):
    """conv_transpose lowers only for fixed shapes: the error names the MIL operation and the nn op."""
    c = ct()
    model = torch.nn.ConvTranspose2d(3, 4, 3, stride=2).eval()
    size = c.RangeDim(4, 32, default=8)
    ml = c.convert(torch.jit.trace(model, torch.randn(1, 3, 8, 8)), convert_to="mlprogram",
                   compute_precision=c.precision.FLOAT32, inputs=[c.TensorType(name="x", shape=(1, 3, size, size))])
    path = str(tmp_path / "deconv.mlpackage")
    ml.save(path)
    with pytest.raises(EstuaryError, match=r"operation '\w+' \(conv_transpose2d\): nn.conv_transpose2d does not "
                                           r"take dynamic dimensions: operand 'input' is float32\[1, 3, x_2, x_3\] "
                                           r"\(x_2=4..32\); compile for a fixed shape \(--shape / shapes=\) "
                                           r"\(MIL conv_transpose, function 'main'"):
        import_model(path)
    nn = import_model(path, shapes={"x": [1, 3, 8, 8]})  # a fixed shape converts
    nn.close()
