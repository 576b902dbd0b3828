"""NNAPI recurrent layers: RNN, LSTM and SVDF (API level 27), composed of gemm / element-wise nn ops.

LSTM and SVDF follow Android's reference implementation where the API-27 header differs: LSTM's scratch
buffer is [batch, 4 * num_units] ([batch, 3 * num_units] with CIFG) holding the reference's final
gate buffers block after block (input gate, act(cell), forget gate (1 - forget with CIFG),
output gate * act(cell)); a scratch operand declared [batch, num_units, 4] (the header's form) gets
the same data in that shape. SVDF's state is [batch, memory_size * num_filters] (num_filters =
num_units * rank), each filter's memory contiguous with the newest entry last.
"""
import numpy as np

from estuary.importers.nnapi.model import OperationCode as Op
from estuary.importers.nnapi.ops import OPS


@OPS.op(Op.RNN)
def rnn(c, ins, outs):
    """state = activation(input W^T + state R^T + bias); both outputs are the new state."""
    c.check(len(ins) == 6 and len(outs) == 2, f"takes 6 inputs and 2 outputs, got {len(ins)} and {len(outs)}")
    x, w, r, b, h = (c.tensor(i) for i in ins[:5])
    pre = c.op("add", [c.op("gemm", [x, w, b], b_transpose=True), c.op("gemm", [h, r], b_transpose=True)])
    state = c.fuse(pre, c.scalar(ins[5]), recurrent=True)
    c.set_output(outs[0], state)
    c.set_output(outs[1], state)


def _float_tensor(c, i, what, shape):
    op = c.operand(i)
    c.check(op.code.name == "TENSOR_FLOAT32", f"{what} (operand {i}) must be TENSOR_FLOAT32, got {op.code.name}")
    v = c.tensor(i)
    got = list(c.spec(v).shape)
    c.check(got == list(shape), f"{what} (operand {i}) must have shape {list(shape)}, got {got}")
    return v


def _clip(c, value, limit):
    return value if limit <= 0 else c.op("clamp", [value], min_value=-float(limit), max_value=float(limit))


def _activation(c, value, code):
    """The reference's ApplyActivationToVector: FuseCode NONE/RELU/RELU1/RELU6, 4 tanh, 6 sigmoid."""
    if code == 6:
        return c.op("sigmoid", [value])
    return c.fuse(value, code, recurrent=True)


@OPS.op(Op.LSTM)
def lstm(c, ins, outs):
    """One LSTM step (CIFG, peephole, projection and clipping optional), as Android's LSTMCell."""
    c.check(len(ins) == 23 and len(outs) == 4, f"takes 23 inputs and 4 outputs, got {len(ins)} and {len(outs)}")
    xspec = c.operand(ins[0])
    c.check(xspec.code.name == "TENSOR_FLOAT32" and len(xspec.dimensions) == 2,
            f"input must be a 2-D TENSOR_FLOAT32, got {xspec.code.name} {xspec.dimensions}")
    batch, n_input = xspec.dimensions
    n_cell = c.operand(ins[4]).dimensions[0] if len(c.operand(ins[4]).dimensions) == 2 else -1
    n_output = c.operand(ins[8]).dimensions[1] if len(c.operand(ins[8]).dimensions) == 2 else -1
    c.check(n_cell > 0 and n_output > 0, "input_to_output_weights and recurrent_to_output_weights must be 2-D")
    present = [not c.omitted(i) for i in ins[:20]]
    cifg = not present[1]
    c.check(all(present[k] == (not cifg) for k in (1, 5, 12)),
            "input_to_input_weights, recurrent_to_input_weights and input_gate_bias must be all present "
            "or all omitted (CIFG)")
    peephole = present[11]
    c.check(present[10] == peephole and (present[9] == (peephole and not cifg)),
            "the peephole weights cell_to_forget/cell_to_output (and cell_to_input without CIFG) must be "
            "all present or all omitted")
    c.check(present[16] or not present[17], "projection_bias requires projection_weights")
    for k in (0, 2, 3, 4, 6, 7, 8, 13, 14, 15, 18, 19):
        c.check(present[k], f"operand {ins[k]} (input {k}) is required")
    x = _float_tensor(c, ins[0], "input", [batch, n_input])
    h = _float_tensor(c, ins[18], "output_state_in", [batch, n_output])
    cell = _float_tensor(c, ins[19], "cell_state_in", [batch, n_cell])
    act = c.scalar(ins[20])
    c.check(act in (0, 1, 2, 3, 4, 6), f"invalid activation {act} (0 NONE, 1 RELU, 2 RELU1, 3 RELU6, 4 TANH, "
                                      "6 SIGMOID)")
    cell_clip, proj_clip = c.scalar(ins[21]), c.scalar(ins[22])
    c.check(cell_clip >= 0 and proj_clip >= 0, f"cell_clip {cell_clip} and proj_clip {proj_clip} must be >= 0")

    def gate(wi, wr, bias, peep, state, name):
        w = _float_tensor(c, ins[wi], f"input_to_{name}_weights", [n_cell, n_input])
        r = _float_tensor(c, ins[wr], f"recurrent_to_{name}_weights", [n_cell, n_output])
        b = _float_tensor(c, ins[bias], f"{name}_bias", [n_cell])
        pre = c.op("add", [c.op("gemm", [x, w, b], b_transpose=True), c.op("gemm", [h, r], b_transpose=True)])
        if peep is not None and present[peep]:
            p = _float_tensor(c, ins[peep], f"cell_to_{name}_weights", [n_cell])
            pre = c.op("add", [pre, c.op("mul", [state, p])])
        return pre

    forget = c.op("sigmoid", [gate(2, 6, 13, 10, cell, "forget")])
    candidate = _activation(c, gate(3, 7, 14, None, None, "cell"), act)
    if cifg:
        input_gate = None
        forget_or_one_minus = c.op("sub", [c.f32([1.0], "one"), forget])
        scaled = c.op("mul", [candidate, forget_or_one_minus])
    else:
        input_gate = c.op("sigmoid", [gate(1, 5, 12, 9, cell, "input")])
        forget_or_one_minus = forget
        scaled = c.op("mul", [candidate, input_gate])
    new_cell = _clip(c, c.op("add", [c.op("mul", [forget, cell]), scaled]), cell_clip)
    out_gate = c.op("sigmoid", [gate(4, 8, 15, 11, new_cell, "output")])
    cell_act = _activation(c, new_cell, act)
    gated = c.op("mul", [out_gate, cell_act])
    if present[16]:
        pw = _float_tensor(c, ins[16], "projection_weights", [n_output, n_cell])
        pb = _float_tensor(c, ins[17], "projection_bias", [n_output]) if present[17] else None
        output = _clip(c, c.op("gemm", [gated, pw, pb], b_transpose=True), proj_clip)
    else:
        c.check(n_output == n_cell, f"without projection output_size {n_output} must equal num_units {n_cell}")
        output = gated
    blocks = ([input_gate] if input_gate is not None else []) + [cell_act, forget_or_one_minus, gated]
    shape = [batch, len(blocks) * n_cell]
    if c.operand(outs[0]).dimensions == [batch, n_cell, len(blocks)]:  # the API-27 header's 3-D form
        shape = [batch, n_cell, len(blocks)]
    scratch = c.op("reshape", [c.op("concat", [blocks], axis=0)], new_shape=shape)
    c.set_output(outs[0], scratch)
    c.set_output(outs[1], output)
    c.set_output(outs[2], new_cell)
    c.set_output(outs[3], output)


@OPS.op(Op.SVDF)
def svdf(c, ins, outs):
    """One SVDF step: memory[:, f, -1] = input . weights_feature[f]; out = activation(bias +
    sum over each unit's rank filters of memory[:, f, :] . weights_time[f]); state shifts left."""
    c.check(len(ins) == 7 and len(outs) == 2, f"takes 7 inputs and 2 outputs, got {len(ins)} and {len(outs)}")
    xop = c.operand(ins[0])
    c.check(xop.code.name == "TENSOR_FLOAT32" and len(xop.dimensions) == 2,
            f"input must be a 2-D TENSOR_FLOAT32, got {xop.code.name} {xop.dimensions}")
    batch, n_input = xop.dimensions
    rank = c.scalar(ins[5])
    wf_dims, wt_dims = c.operand(ins[1]).dimensions, c.operand(ins[2]).dimensions
    c.check(len(wf_dims) == 2 and len(wt_dims) == 2, "weights_feature and weights_time must be 2-D")
    n_filters, memory = wf_dims[0], wt_dims[1]
    c.check(rank >= 1 and n_filters % rank == 0, f"rank {rank} must be >= 1 and divide num_filters {n_filters}")
    c.check(memory >= 1, f"memory_size must be >= 1, got {memory}")
    n_units = n_filters // rank
    x = _float_tensor(c, ins[0], "input", [batch, n_input])
    wf = _float_tensor(c, ins[1], "weights_feature", [n_filters, n_input])
    wt = _float_tensor(c, ins[2], "weights_time", [n_filters, memory])
    bias = None if c.omitted(ins[3]) else _float_tensor(c, ins[3], "bias", [n_units])
    c.check(c.operand(ins[4]).dimensions == [batch, memory * n_filters],
            f"state_in (operand {ins[4]}) must have shape [batch, memory_size * num_units * rank] = "
            f"{[batch, memory * n_filters]} (Android's reference layout), got {c.operand(ins[4]).dimensions}")
    state = _float_tensor(c, ins[4], "state_in", [batch, memory * n_filters])
    act = c.scalar(ins[6])
    c.check(act in (0, 1, 2, 3, 4, 6), f"invalid activation {act}")
    state = c.op("reshape", [state], new_shape=[batch, n_filters, memory])
    newest = c.op("reshape", [c.op("gemm", [x, wf], b_transpose=True)], new_shape=[batch, n_filters, 1])
    if memory > 1:
        kept = c.op("slice", [state], starts=[0, 0, 0], sizes=[batch, n_filters, memory - 1])
        memory_t = c.op("concat", [[kept, newest]], axis=2)
    else:
        memory_t = newest
    scratch = c.op("reduce_sum", [c.op("mul", [memory_t, wt])], axes=[2])  # [batch, num_filters]
    out = c.op("reduce_sum", [c.op("reshape", [scratch], new_shape=[batch, n_units, rank])], axes=[2])
    if bias is not None:
        out = c.op("add", [bias, out])
    out = _activation(c, out, act)
    zeros = c.f32(np.zeros([batch, n_filters, 1]), "zeros")
    if memory > 1:
        shifted = c.op("concat", [[c.op("slice", [memory_t], starts=[0, 0, 1], sizes=[batch, n_filters, memory - 1]),
                                   zeros]], axis=2)
    else:
        shifted = zeros
    c.set_output(outs[0], c.op("reshape", [shifted], new_shape=[batch, memory * n_filters]))
    c.set_output(outs[1], out)
