"""The NNAPI Python API: the NeuralNetworks.h call sequence, ResultCode errors, JSON, Memory."""
import json
import mmap
import os

import numpy as np
import pytest

import estuary
from estuary import nnapi
from estuary.nnapi import NNAPIError, OperandCode, OperationCode, ResultCode


def add_model(fuse=nnapi.FuseCode.FUSED_NONE, dims=(1, 2, 2, 1)):
    m = nnapi.Model()
    a = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=list(dims))
    b = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=list(dims))
    act = m.add_operand(OperandCode.INT32)
    m.set_operand_value(act, fuse)
    out = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=list(dims))
    m.add_operation(OperationCode.ADD, [a, b, act], [out])
    m.identify_inputs_and_outputs([a, b], [out])
    m.finish()
    return m


def test_issue_example_call_sequence():
    m = add_model()
    c = nnapi.Compilation(m)
    c.set_preference(nnapi.PreferenceCode.PREFER_FAST_SINGLE_ANSWER)
    c.finish()
    x = np.array([1, -2, 3, -4], np.float32).reshape(1, 2, 2, 1)
    y = np.array([0.5, 0.5, -5, 5], np.float32).reshape(1, 2, 2, 1)
    result = np.zeros((1, 2, 2, 1), np.float32)
    e = nnapi.Execution(c)
    e.set_input(0, x)
    e.set_input(1, y)
    e.set_output(0, result)
    assert e.start_compute().wait() == ResultCode.NO_ERROR
    np.testing.assert_array_equal(result, x + y)  # IEEE addition: exact


def test_fused_relu6_and_estuary_compile_names():
    m = add_model(nnapi.FuseCode.FUSED_RELU6)
    model = estuary.load(estuary.compile(m))
    assert [n for n, _, _ in model.inputs] == ["input0", "input1"]
    assert [n for n, _, _ in model.outputs] == ["output0"]
    x = np.array([1, -2, 3, 9], np.float32).reshape(1, 2, 2, 1)
    out = model.run({"input0": x, "input1": x})["output0"]
    np.testing.assert_array_equal(out, np.clip(x + x, 0, 6))


def test_enum_values_match_header():
    assert OperationCode.TANH == 28 and OperationCode.LSTM == 16 and OperandCode.TENSOR_QUANT8_ASYMM == 5
    assert ResultCode.BAD_STATE == 6 and nnapi.PaddingCode.PADDING_VALID == 2


def test_json_round_trip(tmp_path):
    m = add_model(nnapi.FuseCode.FUSED_RELU)
    text = m.to_json()
    m2 = nnapi.Model.from_json(text)
    assert m2.to_json() == text
    path = tmp_path / "add.nnapi.json"
    path.write_text(text)
    model = estuary.load(estuary.compile(str(path)))
    x = np.array([1, -2, 3, -4], np.float32).reshape(1, 2, 2, 1)
    np.testing.assert_array_equal(model.run({"input0": x, "input1": x})["output0"], np.maximum(x + x, 0))


def test_operand_value_from_memory(tmp_path):
    path = tmp_path / "weights.bin"
    data = np.array([10, 20, 30, 40], np.float32)
    path.write_bytes(data.tobytes())
    fd = os.open(path, os.O_RDONLY)
    try:
        mem = nnapi.Memory.create_from_fd(data.nbytes, mmap.PROT_READ, fd, 0)
    finally:
        os.close(fd)
    m = nnapi.Model()
    a = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=[4])
    w = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=[4])
    m.set_operand_value_from_memory(w, mem, 0, data.nbytes)
    act = m.add_operand(OperandCode.INT32)
    m.set_operand_value(act, 0)
    out = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=[4])
    m.add_operation(OperationCode.MUL, [a, w, act], [out])
    m.identify_inputs_and_outputs([a], [out])
    m.finish()
    mem.free()
    c = nnapi.Compilation(m)
    c.finish()
    e = nnapi.Execution(c)
    e.set_input(0, np.ones(4, np.float32))
    (res,) = e.compute()
    np.testing.assert_array_equal(res, data)


def _code(fn):
    with pytest.raises(NNAPIError) as e:
        fn()
    return e.value.code


def test_misuse_gives_result_codes():
    m = add_model()
    assert _code(lambda: m.add_operand(OperandCode.FLOAT32)) == ResultCode.BAD_STATE
    assert _code(lambda: m.finish()) == ResultCode.BAD_STATE
    fresh = nnapi.Model()
    assert _code(lambda: fresh.add_operand(99)) == ResultCode.BAD_DATA
    assert _code(lambda: fresh.add_operand(OperandCode.INT32, dimensions=[2])) == ResultCode.BAD_DATA
    assert _code(lambda: fresh.add_operand(OperandCode.TENSOR_QUANT8_ASYMM, [2], scale=0.0)) == ResultCode.BAD_DATA
    t = fresh.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=[2])
    assert _code(lambda: fresh.set_operand_value(t, np.zeros(3))) == ResultCode.BAD_DATA
    assert _code(lambda: fresh.set_operand_value(7, 1)) == ResultCode.BAD_DATA
    assert _code(lambda: fresh.add_operation(OperationCode.ADD, [t, 5], [t])) == ResultCode.BAD_DATA
    assert _code(lambda: fresh.add_operation(1234, [t], [t])) == ResultCode.BAD_DATA
    assert _code(lambda: fresh.identify_inputs_and_outputs([t], [t])) == ResultCode.BAD_DATA
    assert _code(lambda: fresh.finish()) == ResultCode.BAD_STATE  # inputs/outputs never identified
    assert _code(lambda: nnapi.Compilation(fresh)) == ResultCode.BAD_STATE
    assert _code(lambda: nnapi.Compilation(None)) == ResultCode.UNEXPECTED_NULL
    c = nnapi.Compilation(m)
    assert _code(lambda: nnapi.Execution(c)) == ResultCode.BAD_STATE
    c.finish()
    assert _code(lambda: c.finish()) == ResultCode.BAD_STATE
    e = nnapi.Execution(c)
    assert _code(lambda: e.set_input(2, np.zeros(4, np.float32))) == ResultCode.BAD_DATA
    assert _code(lambda: e.set_input(0, np.zeros((2, 2), np.float32))) == ResultCode.BAD_DATA
    assert _code(lambda: e.set_output(0, bytearray(4))) == ResultCode.BAD_DATA  # too small
    assert _code(lambda: e.set_input(0, bytes(7))) == ResultCode.BAD_DATA  # not a whole number of floats
    assert _code(lambda: e.set_output(0, 5)) == ResultCode.BAD_DATA  # not a buffer
    strided = np.zeros((2, 2, 2, 2), np.float32)[..., 0]  # 16 bytes, but not contiguous
    assert _code(lambda: e.set_output(0, strided)) == ResultCode.BAD_DATA
    assert _code(lambda: e.start_compute()) == ResultCode.BAD_DATA  # inputs not set


def test_invalid_graphs_rejected_at_finish():
    m = nnapi.Model()
    a = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=[2])
    act = m.add_operand(OperandCode.INT32)
    m.set_operand_value(act, 0)
    out = m.add_operand(OperandCode.TENSOR_FLOAT32, dimensions=[2])
    m.add_operation(OperationCode.ADD, [a, a, act], [out])
    m.add_operation(OperationCode.ADD, [a, a, act], [out])  # writes `out` twice
    m.identify_inputs_and_outputs([a], [out])
    assert _code(lambda: m.finish()) == ResultCode.BAD_DATA


def test_bad_activation_code_is_a_clear_error():
    m = add_model(fuse=7)
    with pytest.raises(NNAPIError, match="invalid fused activation code 7") as e:
        nnapi.Compilation(m).finish()
    assert e.value.code == ResultCode.BAD_DATA


def test_malformed_json(tmp_path):
    p = tmp_path / "bad.nnapi.json"
    p.write_text(json.dumps({"operands": [{"type": "NOPE"}]}))
    with pytest.raises(estuary.EstuaryError, match="malformed NNAPI model JSON"):
        estuary.compile(str(p))
