"""tract's operators as torch-to-nnef writes them (importers/nnef/ops/tract_core.py,
tract_transformers.py), in small hand-written documents of the tract dialect (no KHR extension
declarations, `extension tract_registry ...;`, `tract_core_external`): each runs in tract (PyPI
bindings, the oracle) and in Estuary. Documents in the Khronos target's style are checked against
torch; operators nothing defines are refused by name, all at once."""
import numpy as np
import pytest

import estuary
from estuary.base.errors import ModelImportError, UnsupportedOpError
from estuary.importers import import_model
from tests.importers.nnef.util import write_model

from .exporters import relative_error, tract_outputs

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)


def document(inputs, body, outputs=("y",), registries=("tract_core",), fragments=""):
    lines = ["version 1.0;"] + [f"extension tract_registry {r};" for r in registries] + [fragments]
    lines.append(f"graph network({', '.join(inputs)}) -> ({', '.join(outputs)})\n{{")
    for name, (shape, datum) in inputs.items():
        lines.append(f"    {name} = tract_core_external(shape = {list(shape)}, datum_type = '{datum}');")
    lines += ["    " + s.strip() for s in body.strip().splitlines()]
    return "\n".join(lines + ["}"]) + "\n"


def feed(shape, datum):
    if datum == "i64":
        return RNG.integers(0, 4, shape).astype(np.int64)
    return RNG.standard_normal(shape).astype(np.float32)


CASES = {
    "erf_hard_swish": ({"x": ([2, 3, 4], "f32")}, """
        a = tract_core_erf(x);
        b = tract_core_hard_swish(x);
        y = add(a, b);""", {}),
    "gather": ({"x": ([3, 5], "f32")}, """
        idx = variable<integer>(label = 'idx', shape = [2, 2]);
        y = tract_core_gather(x, idx, axis = 1);""", {"idx": np.array([[0, 4], [-1, 2]], np.int64)}),
    "gather_elements": ({"x": ([3, 4], "f32")}, """
        idx = variable<integer>(label = 'idx', shape = [3, 2]);
        y = tract_core_gather_elements(x, idx, axis = 1);""", {"idx": RNG.integers(0, 4, (3, 2)).astype(np.int64)}),
    "gather_nd": ({"x": ([3, 4, 2], "f32")}, """
        idx = variable<integer>(label = 'idx', shape = [5, 2]);
        y = tract_core_gather_nd(x, idx, batch_dims = 0);""",
                  {"idx": np.stack([RNG.integers(0, 3, 5), RNG.integers(0, 4, 5)], 1).astype(np.int64)}),
    "range_cast": ({"x": ([1, 6], "f32")}, """
        r = tract_core_range(0, 12, step = 2);
        f = tract_core_cast(r, to = 'f32');
        b = tract_core_cast(x, to = 'bool');
        g = tract_core_cast(b, to = 'f32');
        y = add(mul(x, unsqueeze(f, axes = [0])), g);""", {}),
    "tdim_cast": ({"x": ([2, 3], "i64")}, """
        t = tract_core_cast(x, to = 'TDim');
        s = tract_core_shape_of(x);
        y = tract_core_cast(add(t, slice(s, axes = [0], begin = [1], end = [2], stride = [1])), to = 'f32');""", {}),
    "resize_linear": ({"x": ([1, 2, 5, 4], "f32")}, """
        sizes = variable<integer>(label = 'sizes', shape = [4]);
        y = tract_core_resize(x, interpolator = 'linear', coord_transformer = 'pytorch_half_pixel', nearest_mode = 'floor', sizes = sizes);""",
                      {"sizes": np.array([1, 2, 9, 8], np.int64)}),
    "resize_nearest": ({"x": ([1, 2, 3, 4], "f32")}, """
        scales = variable<scalar>(label = 'scales', shape = [4]);
        y = tract_core_resize(x, interpolator = 'nearest', coord_transformer = 'asymmetric', nearest_mode = 'floor', scales = scales);""",
                       {"scales": np.array([1, 1, 2, 3], np.float32)}),
    "broadcast_trilu": ({"x": ([1, 4], "f32")}, """
        b = tract_core_broadcast(x, shape = [3, 4]);
        y = tract_core_trilu(b, 1, upper = true);""", {}),
    "rms_norm": ({"x": ([2, 3, 8], "f32")}, """
        y = tract_transformers_rms_norm(x, axis = 2, eps = 0.001);""", {}),
    "sdpa_float_mask_gqa": ({"q": ([1, 4, 3, 8], "f32"), "k": ([1, 2, 5, 8], "f32"), "v": ([1, 2, 5, 8], "f32")}, """
        mask = variable<scalar>(label = 'mask', shape = [3, 5]);
        y = tract_transformers_sdpa(q, k, v, mask, datum_type = 'f32', acc_datum_type = 'f32', is_causal = false, scale = 0.3);""",
                            {"mask": (RNG.standard_normal((3, 5)) * 2).astype(np.float32)}),
    "sdpa_causal": ({"q": ([1, 2, 3, 8], "f32"), "k": ([1, 2, 5, 8], "f32"), "v": ([1, 2, 5, 8], "f32")}, """
        y = tract_transformers_sdpa(q, k, v, datum_type = 'f32', acc_datum_type = 'f32', is_causal = true);""", {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_tract_operator_matches_tract(tmp_path, case):
    inputs, body, variables = CASES[case]
    registries = ("tract_core", "tract_transformers") if "tract_transformers" in body else ("tract_core",)
    path = write_model(tmp_path, document(inputs, body, registries=registries), variables)
    feeds = {n: feed(shape, datum) for n, (shape, datum) in inputs.items()}
    want = tract_outputs(path, list(feeds.values()))[0]
    ours = {n: (v.astype(np.int32) if v.dtype == np.int64 else v) for n, v in feeds.items()}
    got = estuary.load(estuary.compile(path)).run(ours)["y"]
    assert got.shape == want.shape
    assert relative_error(got, want) < 1e-5


CUMSUM = """
fragment scan_body_add( scan_input: tensor<scalar>, acc_input: tensor<scalar> ) -> ( added: tensor<scalar> )
{
    added = scan_input + acc_input;
}

fragment tract_cumsum( input: tensor<scalar>, init: tensor<scalar>, axis: integer ) -> ( output: tensor<scalar> )
{
    output = tract_core_scan(body = "scan_body_add", scan = [("scan_input", input, axis, 1)], full = [],
        state = [("acc_input", init, "added")], output = [("added", "full", axis, 1)], skip = 0,
        reset_every_turn = false);
}
"""


def test_cumulative_sum_scan_matches_tract(tmp_path):
    """tract_core_scan in the form torch-to-nnef's cumsum fragment writes."""
    text = document({"x": ([2, 5], "f32")}, """
        first = slice(x, axes = [1], begin = [0], end = [1], stride = [1]);
        y = tract_cumsum(x, sub(first, first), axis = 1);""", fragments=CUMSUM)
    path = write_model(tmp_path, text)
    x = feed([2, 5], "f32")
    want = tract_outputs(path, [x])[0]
    np.testing.assert_allclose(estuary.load(estuary.compile(path)).run({"x": x})["y"], want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(want, np.cumsum(x, axis=1), rtol=1e-6, atol=1e-6)


def test_scan_without_a_scanned_tensor_is_refused(tmp_path):
    """torch-to-nnef 0.24 sometimes writes `scan = []` (its dynamic-length Llama export without a
    mask): there is nothing to scan, and the error says so."""
    text = document({"x": ([2, 5], "f32")}, "y = tract_cumsum(x, x, axis = 1);",
                    fragments=CUMSUM.replace('("scan_input", input, axis, 1)', ""))
    with pytest.raises(ModelImportError, match="scan = \\[\\]"):
        import_model(write_model(tmp_path, text))


def test_sdpa_boolean_mask_keeps_true_positions(tmp_path):
    """A logical mask keeps the positions where it is true (torch's meaning; tract 0.23 adds it)."""
    keep = RNG.random((3, 5)) < 0.6
    keep[:, 0] = True
    text = document({n: ([1, 2, 3 if n == "q" else 5, 8], "f32") for n in "qkv"}, """
        mask = variable<logical>(label = 'mask', shape = [3, 5]);
        y = tract_transformers_sdpa(q, k, v, mask, datum_type = 'f32', acc_datum_type = 'f32', is_causal = false);""",
                    registries=("tract_core", "tract_transformers"))
    path = write_model(tmp_path, text, {"mask": keep})
    q, k, v = (feed([1, 2, 3 if n == "q" else 5, 8], "f32") for n in "qkv")
    want = torch.nn.functional.scaled_dot_product_attention(*(torch.from_numpy(t) for t in (q, k, v)),
                                                            attn_mask=torch.from_numpy(keep)).numpy()
    got = estuary.load(estuary.compile(path)).run({"q": q, "k": k, "v": v})["y"]
    assert relative_error(got, want) < 1e-5


KHRONOS_STYLE = """version 1.0;
extension KHR_enable_fragment_definitions;
extension KHR_enable_operator_expressions;

fragment gelu( x: tensor<scalar> ) -> ( y: tensor<scalar> )
{
    y = 0.5 * x * ( 1.0 + erf(x * 0.7071067811865475));
}

graph network(x) -> (y)
{
    x = external<scalar>(shape = [1, 3, 4, 5]);
    w = variable<scalar>(label = 'w', shape = [4, 3, 1, 1]);
    b = variable<scalar>(label = 'b', shape = [4]);
    c = conv(x, w, b, padding = [(0, 0), (0, 0)], stride = [1, 1], dilation = [1, 1], groups = 1, border = 'constant');
    mean = variable<scalar>(label = 'mean', shape = [4]);
    var = variable<scalar>(label = 'var', shape = [4]);
    eps = variable<scalar>(label = 'eps', shape = []);
    m = unsqueeze(mean, axes = [0, 1, 2]);
    v = unsqueeze(var, axes = [0, 1, 2]);
    n = batch_normalization(c, m, v, 0.0, 1.0, epsilon = eps);
    g = gelu(n, 0.0);
    r = relu6(g);
    k = add(16, 0);
    s = softmax(r, 2);
    y = add(s, unsqueeze(k, axes = [0, 1, 2, 3]));
}
"""


def test_khronos_target_constructs_match_torch(tmp_path):
    """A rank-0 variable as epsilon, a conv bias [C], BatchNorm parameters [1, 1, 1, C] (per
    channel), a document gelu (erf) redefining the library's and called with an extra argument,
    relu6 without a definition, an integer where integer[] is declared, integer literals added."""
    w, b = RNG.standard_normal((4, 3, 1, 1)).astype(np.float32), RNG.standard_normal(4).astype(np.float32)
    mean, var = RNG.standard_normal(4).astype(np.float32), RNG.uniform(0.5, 2, 4).astype(np.float32)
    eps = np.float32(0.01)
    path = write_model(tmp_path, KHRONOS_STYLE, {"w": w, "b": b, "mean": mean, "var": var, "eps": np.array(eps)})
    x = RNG.standard_normal((1, 3, 4, 5)).astype(np.float32)
    t = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b))
    t = torch.nn.functional.batch_norm(t, torch.from_numpy(mean), torch.from_numpy(var), eps=float(eps))
    t = torch.softmax(torch.nn.functional.relu6(torch.nn.functional.gelu(t)), 2) + 16
    got = estuary.load(estuary.compile(path)).run({"x": x})["y"]
    assert relative_error(got, t.numpy()) < 1e-5


def test_unknown_tract_operators_are_refused_by_name_all_at_once(tmp_path):
    text = document({"x": ([2, 3], "f32")}, """
        a = tract_core_fft(x, axis = 1, inverse = false);
        b = tract_core_erf(a);
        y = tract_core_stft(b, axis = 1, frame = 2, stride = 1);""")
    with pytest.raises(UnsupportedOpError) as info:
        import_model(write_model(tmp_path, text))
    message = str(info.value)
    assert "2 unsupported operation(s)" in message
    assert "'a' (tract_core_fft)" in message and "'y' (tract_core_stft)" in message


def test_unknown_operator_inside_a_fragment_is_named_with_it(tmp_path):
    text = document({"x": ([2, 3], "f32")}, "y = f(x);",
                    fragments="fragment f( x: tensor<scalar> ) -> ( y: tensor<scalar> ) { y = tract_core_bitnot(x); }")
    with pytest.raises(UnsupportedOpError, match=r"tract_core_bitnot.*in fragment 'f'"):
        import_model(write_model(tmp_path, text))


def test_run_time_value_where_an_integer_is_declared_is_refused(tmp_path):
    text = document({"x": ([2, 3], "f32"), "n": ([1], "i64")}, "y = tile(x, repeats = [n, 1]);")
    with pytest.raises(ModelImportError, match=r"graph.nnef:\d+:\d+: .*must be known when the model is imported"):
        import_model(write_model(tmp_path, text))
