"""NNEF graph loading: tensor-introducing ops, update, graph.quant (§5.3 / §4.9.5), shapes override
(API and CLI), containers, fragment expansion, and clear errors for malformed or hostile input."""
import tarfile

import numpy as np
import pytest

from helpers import assert_accumulated, assert_exact, assert_ulp
from tests.importers.nnef.util import graph_text, run, write_model

import estuary
from estuary.base.errors import EstuaryError, UnsupportedOpError
from estuary.importers.nnef import load_model

rng = np.random.default_rng(3)


def _load_error(tmp_path, text, variables=None, quant=None, shapes=None):
    path = write_model(tmp_path, text, variables, quant)
    with pytest.raises(EstuaryError) as err:
        load_model(path, shapes=shapes)
    return str(err.value)


# ------------------------------------------------------------ tensor-introducing ops, update


def test_constant_variable_update(tmp_path):
    v = rng.standard_normal((2, 3)).astype(np.float32)
    body = """
    k = constant<scalar>(shape = [2, 3], value = [1.5]);
    ki = constant<integer>(shape = [3], value = [4, -5, 6]);
    kl = constant<logical>(shape = [1, 3], value = [true, false, true]);
    v = variable<scalar>(shape = [2, 3], label = 'state/V');
    same = variable<scalar>(shape = [2, 3], label = 'STATE/v');
    u = update(v, add(v, x));
    old = add(v, k);
    sel = select(kl, same, 0.0);
    """
    text = graph_text({"x": [2, 3]}, ["u", "old", "ki", "sel"], body)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    out = run(write_model(tmp_path, text, {"state/V": v}), {"x": x})
    assert_exact(out["u"], v + x)  # update returns the new value
    assert_exact(out["old"], v + np.float32(1.5))  # the variable still reads its stored value
    assert out["ki"].dtype == np.int32 and list(out["ki"]) == [4, -5, 6]
    assert_exact(out["sel"], np.where([[True, False, True]], v, 0))  # labels shared case-insensitively


def test_logical_inputs_and_outputs_are_numpy_bool(tmp_path):
    """`external<logical>` takes a numpy bool array and a logical result comes back as bool
    (uint8 0/1 inside); a uint8 array for a logical input is a clear dtype error."""
    import estuary

    text = graph_text({"x": [1, 4]}, ["y", "z"], """
    m = external<logical>(shape = [1, 4]);
    y = select(m, x, 0.0);
    z = and(m, gt(x, 0.0));
    """).replace("graph G( x ) -> ( y, z )", "graph G( x, m ) -> ( y, z )")
    path = write_model(tmp_path, text)
    model = estuary.load(estuary.compile(path))
    assert [d for _, _, d in model.inputs] == ["float32", "bool"] and model.outputs[1][2] == "bool"
    x = np.array([[1.0, -2.0, 3.0, -4.0]], np.float32)
    m = np.array([[True, True, False, False]])
    out = model.run({"x": x, "m": m})
    assert_exact(out["y"], np.where(m, x, 0).astype(np.float32))
    assert out["z"].dtype == np.bool_ and out["z"].tolist() == [[True, False, False, False]]
    with pytest.raises(estuary.RuntimeInputError, match="has dtype uint8, the model expects bool"):
        model.run({"x": x, "m": m.astype(np.uint8)})


def test_logical_and_integer_variables(tmp_path):
    mask = np.array([[True, False, False, True, True]])
    ints = np.array([3, -1, 7], np.int32)
    body = """
    m = variable<logical>(shape = [1, 5], label = 'm');
    i = variable<integer>(shape = [3], label = 'i');
    y = select(m, x, neg(x));
    j = copy(i);
    """
    text = graph_text({"x": [1, 5]}, ["y", "j"], body)
    x = rng.standard_normal((1, 5)).astype(np.float32)
    out = run(write_model(tmp_path, text, {"m": mask, "i": ints}), {"x": x})
    assert_exact(out["y"], np.where(mask, x, -x))
    assert_exact(out["j"], ints)


# ------------------------------------------------------------ graph.quant


def _linear_q(x, lo, hi, bits):
    r = 2.0 ** bits - 1
    z = np.clip(x, lo, hi)
    q = np.floor((z - lo) / (hi - lo) * r + 0.5)
    return q / r * (hi - lo) + lo


def _log_q(x, hi, bits):
    m = np.ceil(np.log2(hi))
    r = 2.0 ** bits - 1
    with np.errstate(divide="ignore"):
        q = np.floor(np.clip(np.log2(np.abs(x)), m - r, m) + 0.5)
    return np.sign(x) * 2.0 ** q


def test_quantization_file(tmp_path):
    w = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    body = """
    w = variable<scalar>(shape = [3, 4], label = 'w');
    s = add(x, w);
    y = mul(s, 2.0);
    z = copy(x);
    """
    quant = ('"x": linear_quantize(min = -1.0, max = 1.5, bits = 5);\n'
             '"w": linear_quantize(min = -1.0, max = 1.0, bits = 3);\n'
             '"s": logarithmic_quantize(max = 5.0, bits = 3);\n')
    text = graph_text({"x": [3, 4]}, ["y", "z"], body)
    x = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    x[0, :3] = [0.0, -1.0, 1.5]
    out = run(write_model(tmp_path, text, {"w": w}, quant=quant), {"x": x})
    xq = _linear_q(x.astype(np.float64), -1.0, 1.5, 5)
    wq = _linear_q(w.astype(np.float64), -1.0, 1.0, 3)
    # quantized after `external`, so every reader sees it (absolute bound: q / r * (max - min) + min cancels)
    np.testing.assert_allclose(out["z"], xq, rtol=1e-6, atol=1e-6)
    assert_ulp(out["y"], 2 * _log_q(xq + wq, 5.0, 3), 0)


def test_unknown_quantization_algorithm(tmp_path):
    text = graph_text({"x": [2]}, ["y"], "y = neg(x);")
    msg = _load_error(tmp_path, text, quant='"y": mystery_quantize(bits = 3);\n')
    assert "graph.quant:1" in msg and "mystery_quantize" in msg


# ------------------------------------------------------------ shapes, containers, fragments


def test_shape_override_api_and_cli(tmp_path, capsys):
    text = graph_text({"x": [1, 3, 4, 4]}, ["y"], "y = mean_reduce(x, axes = [2, 3]);")
    path = write_model(tmp_path, text)
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    out = run(path, {"x": x}, shapes={"x": [2, 3, 5, 6]})
    assert_accumulated(out["y"], x.astype(np.float64).mean(axis=(2, 3), keepdims=True), 30)
    from estuary.cli import main

    assert main(["import", path, "--shape", "x=2x3x5x6"]) in (0, None)
    assert "tensor<2x3x5x6xf32>" in capsys.readouterr().out
    assert main(["import", path, "--shape", "x=2x3"]) not in (0, None)
    assert "must have 4 positive extents" in capsys.readouterr().err


def test_containers_and_bare_graph(tmp_path):
    w = rng.standard_normal((2, 2)).astype(np.float32)
    text = graph_text({"x": [2, 2]}, ["y"], "w = variable<scalar>(shape = [2, 2], label = 'dir/w');\ny = sub(x, w);")
    folder = write_model(tmp_path, text, {"dir/w": w})
    x = rng.standard_normal((2, 2)).astype(np.float32)
    for suffix, mode, arcname in ((".tgz", "w:gz", "."), (".tar", "w", "model")):
        archive = tmp_path / f"m{suffix}"
        with tarfile.open(archive, mode) as tar:
            tar.add(folder, arcname=arcname)
        assert_exact(run(str(archive), {"x": x})["y"], x - w)
    bare = tmp_path / "bare.nnef"
    bare.write_text(graph_text({"x": [2, 2]}, ["y"], "y = mul(x, x);"))
    assert_exact(run(str(bare), {"x": x})["y"], x * x)


def test_custom_and_standard_fragments(tmp_path):
    fragments = """
fragment scale_shift( x: tensor<scalar>, s: scalar = 2.0, t: scalar = 0.5 ) -> ( y: tensor<scalar> )
{
    y = x * s + t;
}
fragment twice( x: tensor<scalar> ) -> ( y: tensor<scalar>, z: tensor<scalar> )
{
    y = scale_shift(x);
    z = scale_shift(x, s = -1.0, t = 0.0);
}
"""
    body = "a, b = twice(x);\nc = relu(a);\nd = scale_shift(b, t = -1.0) - x;"
    text = graph_text({"x": [6]}, ["a", "b", "c", "d"], body,
                      extensions=["KHR_enable_fragment_definitions", "KHR_enable_operator_expressions"],
                      fragments=fragments)
    x = np.linspace(-1, 1, 6).astype(np.float32)
    out = run(write_model(tmp_path, text), {"x": x})
    assert_exact(out["a"], x * 2 + 0.5)
    assert_exact(out["b"], -x)
    assert_exact(out["c"], np.maximum(x * 2 + 0.5, 0))
    assert_exact(out["d"], (-x * 2 - 1) - x)


# ------------------------------------------------------------ errors


def test_syntax_error_names_file_and_line(tmp_path):
    msg = _load_error(tmp_path, graph_text({"x": [2]}, ["y"], "z = neg(x);\ny = add(x, );"))
    assert "graph.nnef:7:" in msg and "')'" in msg


def test_shape_error_names_line(tmp_path):
    msg = _load_error(tmp_path, graph_text({"x": [2, 3]}, ["y"], "y = slice(x, axes = [1], begin = [2], end = [1]);"))
    assert "graph.nnef:6" in msg and "slice" in msg


def test_conversion_error_names_operation(tmp_path):
    body = "w = constant(shape = [1, 1, 2, 2, 2, 2], value = [1.0]);\ny = conv(x, w);"
    msg = _load_error(tmp_path, graph_text({"x": [1, 1, 3, 3, 3, 3]}, ["y"], body))
    assert "graph.nnef:7" in msg and "'y' (conv)" in msg and "4-D conv is not supported" in msg


def test_operation_without_body_is_unsupported(tmp_path):
    text = graph_text({"x": [2]}, ["y"], "y = opaque(x);", extensions=["KHR_enable_fragment_definitions"],
                      fragments="fragment opaque( x: tensor<scalar> ) -> ( y: tensor<scalar> );")
    path = write_model(tmp_path, text)
    with pytest.raises(UnsupportedOpError) as err:
        load_model(path)
    assert "'y' (opaque)" in str(err.value)


def test_huge_shapes_refused(tmp_path):
    msg = _load_error(tmp_path, graph_text({"x": [100000, 100000, 1000]}, ["y"], "y = neg(x);"))
    assert "more than the" in msg and "'x'" in msg
    msg = _load_error(tmp_path, graph_text({"x": [2, 3]}, ["y"], "y = tile(x, repeats = [100000, 100000]);"))
    assert "more than the" in msg and "'y'" in msg
    msg = _load_error(tmp_path, graph_text({"x": [2]}, ["y"], "k = constant(shape = [65536, 65536], value = [0.0]);\n"
                                                                "y = neg(x);"))
    assert "more than the" in msg and "'k'" in msg


def test_variable_checks(tmp_path):
    text = graph_text({"x": [2, 3]}, ["y"], "w = variable<scalar>(shape = [2, 3], label = 'w');\ny = add(x, w);")
    assert "does not match [2, 3]" in _load_error(tmp_path / "a", text, {"w": np.zeros((3, 2), np.float32)})
    assert "holds int32 items" in _load_error(tmp_path / "b", text, {"w": np.zeros((2, 3), np.int32)})
    assert "'w.dat' is missing" in _load_error(tmp_path / "c", text, {})
    bad = text.replace("label = 'w'", "label = '../w'")
    assert "'..'" in _load_error(tmp_path / "d", bad, {})


def test_bad_shape_override(tmp_path):
    text = graph_text({"x": [2, 3]}, ["y"], "y = neg(x);")
    assert "not an external" in _load_error(tmp_path / "a", text, shapes={"z": [1]})
    assert "2 positive extents" in _load_error(tmp_path / "b", text, shapes={"x": [0, 3]})


def test_compile_entry_point_forwards_shapes(tmp_path):
    path = write_model(tmp_path, graph_text({"x": [1, 4]}, ["y"], "y = exp(x);"))
    art = estuary.compile(path, shapes={"x": [3, 4]})
    x = rng.standard_normal((3, 4)).astype(np.float32)
    assert_ulp(estuary.load(art).run({"x": x})["y"], np.exp(x.astype(np.float64)), 2)


def test_quantization_by_document_fragment(tmp_path):
    fragment = """
fragment step_quantize( x: tensor<scalar>, step: scalar, levels: integer, signed: logical = false )
-> ( y: tensor<scalar> )
{
    lo = -scalar(levels) if signed else 0.0;
    y = clamp(round(x / step), lo, scalar(levels)) * step;
}
"""
    text = graph_text({"x": [8]}, ["y"], "s = mul(x, 2.0);\ny = neg(s);", fragments=fragment,
                      extensions=["KHR_enable_fragment_definitions", "KHR_enable_operator_expressions"])
    quant = '"s": step_quantize(step = 0.25, levels = 6, signed = true);\n'
    x = np.linspace(-1.3, 1.3, 8).astype(np.float32)
    out = run(write_model(tmp_path, text, quant=quant), {"x": x})
    s = x.astype(np.float64) * 2
    assert_exact(out["y"], -np.clip(np.floor(s / 0.25 + 0.5), -6, 6) * 0.25)
