"""NNAPI models whose input dimensions are given as 0: symbols input<n>_<axis>, one artefact,
the dimensions set per execution (ANeuralNetworksExecution_setInput's type), the outputs' shapes
read back (getOutputOperandDimensions); `shapes=` still specializes. Oracle: numpy."""
import numpy as np
import pytest

import estuary
from estuary import nnapi
from estuary.base.errors import EstuaryError
from estuary.importers.nnapi import load_model
from estuary.nnapi import NNAPIError, OperandCode as C, OperationCode as O, ResultCode

W = np.arange(12, dtype=np.float32).reshape(3, 4) / 8 - 0.5
B = np.array([0.25, -1, 0.5], np.float32)


def _scalar(m, value):
    i = m.add_operand(C.INT32)
    m.set_operand_value(i, value)
    return i


def fully_connected(relu=True):
    """y = relu(x W^T + b) for x of [0 (batch), 4]."""
    m = nnapi.Model()
    x = m.add_operand(C.TENSOR_FLOAT32, [0, 4])
    w = m.add_operand(C.TENSOR_FLOAT32, [3, 4])
    m.set_operand_value(w, W)
    b = m.add_operand(C.TENSOR_FLOAT32, [3])
    m.set_operand_value(b, B)
    y = m.add_operand(C.TENSOR_FLOAT32, [0, 3])
    m.add_operation(O.FULLY_CONNECTED, [x, w, b, _scalar(m, 1 if relu else 0)], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    return m


def add_free(dims_a=(0, 0), dims_b=(0, 0)):
    m = nnapi.Model()
    a = m.add_operand(C.TENSOR_FLOAT32, list(dims_a))
    b = m.add_operand(C.TENSOR_FLOAT32, list(dims_b))
    y = m.add_operand(C.TENSOR_FLOAT32, [0] * len(dims_a))
    m.add_operation(O.ADD, [a, b, _scalar(m, 0)], [y])
    m.identify_inputs_and_outputs([a, b], [y])
    m.finish()
    return m


def _fc_reference(x):
    return np.maximum(x @ W.T + B, 0)


def test_free_dimensions_become_symbols():
    nn = load_model(fully_connected())
    try:
        assert [(n, str(s)) for n, s in nn.inputs + nn.outputs] == [("input0", "float32[input0_0, 4]"),
                                                                      ("output0", "float32[input0_0, 3]")]
    finally:
        nn.close()
    nn = load_model(add_free())
    try:  # the two inputs' dimensions meet in ADD: the second's symbols are bound to the first's
        assert nn.signature()["dims"]["rules"] == ["input1_0 = input0_0; input0_0=1..2147483647",
                                                   "input1_1 = input0_1; input0_1=1..2147483647"]
    finally:
        nn.close()


def test_one_compilation_runs_every_batch_size():
    c = nnapi.Compilation(fully_connected())
    c.finish()
    for n in (1, 3, 17):
        x = np.random.default_rng(n).uniform(-2, 2, (n, 4)).astype(np.float32)
        e = nnapi.Execution(c)
        e.set_input(0, x.tobytes(), type=(C.TENSOR_FLOAT32, [n, 4]))  # the C API's type with the dimensions
        out = np.zeros((n, 3), np.float32)
        e.set_output(0, out)
        assert e.start_compute().wait() == ResultCode.NO_ERROR
        assert e.get_output_operand_dimensions(0) == [n, 3] and e.get_output_operand_rank(0) == 2
        np.testing.assert_allclose(out, _fc_reference(x), rtol=1e-6, atol=1e-6)
    e = nnapi.Execution(c)  # an array gives its shape
    x = np.ones((2, 4), np.float32)
    e.set_input(0, x)
    np.testing.assert_allclose(e.compute()[0], _fc_reference(x), rtol=1e-6)


def test_shapes_still_specialize():
    art = estuary.compile(fully_connected(), shapes={"input0": [5, 4]})
    model = estuary.load(art)
    assert model.inputs == [("input0", (5, 4), "float32")] and model.dims == {}
    x = np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4)
    np.testing.assert_allclose(model.run({"input0": x})["output0"], _fc_reference(x), rtol=1e-6, atol=1e-6)


def test_inputs_sharing_a_dimension_must_agree():
    c = nnapi.Compilation(add_free())
    c.finish()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    e = nnapi.Execution(c)
    e.set_input(0, a)
    e.set_input(1, a)
    np.testing.assert_array_equal(e.compute()[0], 2 * a)
    e = nnapi.Execution(c)
    e.set_input(0, a)
    e.set_input(1, np.ones((2, 4), np.float32))
    with pytest.raises(NNAPIError) as err:
        e.compute()
    assert err.value.code == ResultCode.OP_FAILED
    assert "input 'input1' dimension 1 (input1_1) is 4, but the model needs input1_1 = input0_1 = 3" in str(err.value)


def test_output_buffer_too_small_reports_the_needed_dimensions():
    c = nnapi.Compilation(fully_connected())
    c.finish()
    e = nnapi.Execution(c)
    e.set_input(0, np.ones((6, 4), np.float32))
    e.set_output(0, bytearray(12))
    with pytest.raises(NNAPIError) as err:
        e.start_compute().wait()
    assert err.value.code == ResultCode.OUTPUT_INSUFFICIENT_SIZE and "needs 72 bytes, the buffer has 12" in str(err.value)
    assert e.get_output_operand_dimensions(0) == [6, 3]


def test_execution_type_errors():
    c = nnapi.Compilation(fully_connected())
    c.finish()
    e = nnapi.Execution(c)
    with pytest.raises(NNAPIError, match=r"input 0: dimensions \[0, 4\] are not all known; give them with "
                                         r"type=\(TENSOR_FLOAT32, \[d0, d1, \.\.\.\]\)"):
        e.set_input(0, bytes(16))
    with pytest.raises(NNAPIError, match=r"input 0: dimensions \[2, 5\] do not fit the model's \[0, 4\]"):
        e.set_input(0, bytes(40), type=(C.TENSOR_FLOAT32, [2, 5]))
    with pytest.raises(NNAPIError, match=r"input 0: shape \[2, 5\] does not match \[0, 4\]"):
        e.set_input(0, np.ones((2, 5), np.float32))
    with pytest.raises(NNAPIError, match="has not computed its outputs"):
        e.get_output_operand_dimensions(0)


def test_an_operation_that_needs_fixed_sizes_names_itself():
    m = nnapi.Model()
    x = m.add_operand(C.TENSOR_FLOAT32, [1, 0, 0, 1])
    y = m.add_operand(C.TENSOR_FLOAT32, [1, 4, 4, 1])
    m.add_operation(O.RESIZE_BILINEAR, [x, _scalar(m, 4), _scalar(m, 4)], [y])
    m.identify_inputs_and_outputs([x], [y])
    m.finish()
    with pytest.raises(EstuaryError) as e:
        load_model(m)
    assert "operation #0 RESIZE_BILINEAR: does not take dynamic dimensions here" in str(e.value)
    assert "input0_1" in str(e.value) and "shapes=" in str(e.value)
    np.testing.assert_allclose(  # with the sizes fixed it compiles
        estuary.load(estuary.compile(m, shapes={"input0": [1, 2, 2, 1]})).run(
            {"input0": np.ones((1, 2, 2, 1), np.float32)})["output0"], np.ones((1, 4, 4, 1)))
