"""NNAPI EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION, LSTM, RESIZE_BILINEAR and SVDF (float32).

Oracles: pyfarmhash (farmhash.fingerprint64) for LSH, onnxruntime for RESIZE_BILINEAR (ONNX Resize,
asymmetric coordinates) and the basic LSTM, float64 numpy written here from the spec and Android's
reference implementation for the rest. Several operations share one compiled model.
"""
import numpy as np
import pytest
from onnx import helper

from estuary import nnapi
from estuary.nnapi import OperandCode as T, OperationCode as Op
from helpers import assert_accumulated, assert_exact, run_onnx


class Net:
    """Builds one nnapi.Model with several operations; runtime inputs are fed in order."""

    def __init__(self):
        self.m = nnapi.Model()
        self.inputs, self.feeds, self.outputs = [], [], []

    def const(self, value, code=T.TENSOR_FLOAT32, scale=0.0, zero_point=0):
        value = np.asarray(value)
        i = self.m.add_operand(code, dimensions=list(value.shape), scale=scale, zero_point=zero_point)
        self.m.set_operand_value(i, value)
        return i

    def input(self, value, code=T.TENSOR_FLOAT32):
        i = self.m.add_operand(code, dimensions=list(value.shape))
        self.inputs.append(i)
        self.feeds.append(value)
        return i

    def scalar(self, v, code=T.INT32):
        i = self.m.add_operand(code)
        self.m.set_operand_value(i, v)
        return i

    def omitted(self, shape=(0,)):
        i = self.m.add_operand(T.TENSOR_FLOAT32, dimensions=list(shape))
        self.m.set_operand_value(i, None)
        return i

    def add(self, op, ins, out_shapes, codes=None, scale=0.0, zero_point=0):
        """Add an operation with new output operands (quantized ones get scale / zero_point)."""
        quant = T.TENSOR_QUANT8_ASYMM
        outs = [self.m.add_operand(code, dimensions=list(s), scale=scale if code == quant else 0.0,
                                   zero_point=zero_point if code == quant else 0)
                for s, code in zip(out_shapes, codes or [T.TENSOR_FLOAT32] * len(out_shapes))]
        self.m.add_operation(op, ins, outs)
        first = len(self.outputs)
        self.outputs += outs
        return list(range(first, first + len(outs)))

    def run(self):
        self.m.identify_inputs_and_outputs(self.inputs, self.outputs)
        self.m.finish()
        c = nnapi.Compilation(self.m)
        c.finish()
        e = nnapi.Execution(c)
        for k, arr in enumerate(self.feeds):
            e.set_input(k, arr)
        return e.compute()


# ---------------------------------------------------------------- lookups


def test_embedding_and_hashtable_lookup(rng):
    net = Net()
    values = rng.standard_normal((5, 3, 2)).astype(np.float32)
    lookups = np.array([4, 0, 2, 2], np.int32)
    e1 = net.add(Op.EMBEDDING_LOOKUP, [net.input(lookups, T.TENSOR_INT32), net.const(values)], [(4, 3, 2)])
    qvalues = rng.integers(0, 256, (6, 4), dtype=np.uint8)
    qlook = np.array([5, 1], np.int32)
    e2 = net.add(Op.EMBEDDING_LOOKUP, [net.const(qlook, T.TENSOR_INT32),
                                       net.const(qvalues, T.TENSOR_QUANT8_ASYMM, 0.5, 3)],
                 [(2, 4)], [T.TENSOR_QUANT8_ASYMM], scale=0.5, zero_point=3)
    keys = np.array([-7, 2, 9, 40, 123456], np.int32)  # sorted, as the spec requires
    hvalues = rng.standard_normal((5, 3)).astype(np.float32)
    hlook = np.array([9, 5, 123456, -7, 0, 40], np.int32)
    h1 = net.add(Op.HASHTABLE_LOOKUP, [net.input(hlook, T.TENSOR_INT32), net.const(keys, T.TENSOR_INT32),
                                       net.const(hvalues)], [(6, 3), (6,)],
                 [T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM], scale=1.0)
    ivalues = rng.integers(-1000, 1000, (5,), dtype=np.int32)
    h2 = net.add(Op.HASHTABLE_LOOKUP, [net.const(hlook[::-1].copy(), T.TENSOR_INT32),
                                       net.const(keys, T.TENSOR_INT32), net.const(ivalues, T.TENSOR_INT32)],
                 [(6,), (6,)], [T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM], scale=1.0)
    got = net.run()
    assert_exact(got[e1[0]], values[lookups])
    assert_exact(got[e2[0]], qvalues[qlook])

    def table(look, vals):
        index = {int(k): j for j, k in enumerate(keys)}
        out = np.zeros((len(look),) + vals.shape[1:], vals.dtype)
        hits = np.zeros(len(look), np.uint8)
        for i, k in enumerate(look):
            if int(k) in index:
                out[i], hits[i] = vals[index[int(k)]], 1
        return out, hits

    for (o, h), look, vals in ((h1, hlook, hvalues), (h2, hlook[::-1], ivalues)):
        ref, hits = table(look, vals)
        assert_exact(got[o], ref)
        assert_exact(got[h], hits)


def test_lookup_errors():
    import estuary

    net = Net()
    net.add(Op.HASHTABLE_LOOKUP, [net.input(np.zeros(2, np.int32), T.TENSOR_INT32),
                                  net.const(np.array([3, 1], np.int32), T.TENSOR_INT32),
                                  net.const(np.zeros((2, 2), np.float32))], [(2, 2), (2,)],
            [T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM], scale=1.0)
    net.m.identify_inputs_and_outputs(net.inputs, net.outputs)
    net.m.finish()
    with pytest.raises(estuary.VerificationError, match=r"#0 HASHTABLE_LOOKUP.*sorted in ascending order"):
        estuary.compile(net.m)
    net = Net()
    net.add(Op.EMBEDDING_LOOKUP, [net.const(np.array([0, 3], np.int32), T.TENSOR_INT32),
                                  net.input(np.zeros((3, 2), np.float32))], [(2, 2)])
    net.m.identify_inputs_and_outputs(net.inputs, net.outputs)
    net.m.finish()
    with pytest.raises(estuary.VerificationError, match=r"EMBEDDING_LOOKUP.*lookups \[3\] are out of bounds"):
        estuary.compile(net.m)


# ---------------------------------------------------------------- LSH_PROJECTION


def _lsh_oracle(hashes, rows, weight, sparse):
    """Android's reference LSH with pyfarmhash: per seed, sum of weight * int64(hash) in double."""
    farmhash = pytest.importorskip("farmhash")
    bits = np.zeros(hashes.shape, np.int64)
    for i, j in np.ndindex(hashes.shape):
        score = 0.0
        for r, row in enumerate(rows):
            h = farmhash.fingerprint64(np.float32(hashes[i, j]).tobytes() + row.tobytes())
            h = h - (1 << 64) if h >= 1 << 63 else h
            score += float(h) * (1.0 if weight is None else float(weight[r]))
        bits[i, j] = score > 0
    if not sparse:
        return bits.reshape(-1).astype(np.int32)
    return np.array([sum(int(b) << (hashes.shape[1] - 1 - j) for j, b in enumerate(row)) for row in bits],
                    np.int64).astype(np.uint32).astype(np.int32)


def test_lsh_projection(rng):
    pytest.importorskip("farmhash")
    net = Net()
    cases = []
    # (input, numpy dtype, operand code, hash shape, weighted, sparse): key lengths 12, 24, 11 (unaligned
    # bytes), 60, 84 and 404 (the > 64-byte loop) exercise every branch of Fingerprint64
    for shape, dtype, code, hshape, weighted, sparse in [
            ((1, 2), np.float32, T.TENSOR_FLOAT32, (3, 4), False, True),
            ((3, 5), np.float32, T.TENSOR_FLOAT32, (4, 6), True, False),
            ((4, 7), np.uint8, T.TENSOR_QUANT8_ASYMM, (2, 3), False, False),
            ((2, 14), np.int32, T.TENSOR_INT32, (2, 32), True, True),
            ((2, 20), np.float32, T.TENSOR_FLOAT32, (3, 5), False, True),
            ((3, 2, 50), np.float32, T.TENSOR_FLOAT32, (2, 8), True, True)]:
        if dtype == np.uint8:
            x = rng.integers(0, 256, shape, dtype=np.uint8)
            xi = net.const(x, code, 1.0, 0)
        elif dtype == np.int32:
            x = rng.integers(-5, 5, shape, dtype=np.int32)
            xi = net.input(x, code)
        else:
            x = rng.standard_normal(shape).astype(np.float32)
            xi = net.input(x, code)
        hashes = rng.standard_normal(hshape).astype(np.float32)
        weight = rng.standard_normal(shape[0]).astype(np.float32) if weighted else None
        ins = [net.const(hashes), xi, net.const(weight) if weighted else net.omitted(), net.scalar(1 if sparse else 2)]
        out = net.add(Op.LSH_PROJECTION, ins, [(hshape[0],) if sparse else (hshape[0] * hshape[1],)],
                      [T.TENSOR_INT32])
        cases.append((out[0], hashes, x.reshape(shape[0], -1), weight, sparse))
    got = net.run()
    for k, hashes, rows, weight, sparse in cases:
        assert_exact(got[k], _lsh_oracle(hashes, rows, weight, sparse))


# ---------------------------------------------------------------- RESIZE_BILINEAR


def test_resize_bilinear(rng):
    x = rng.standard_normal((2, 3, 4, 3)).astype(np.float32)
    net = Net()
    xi = net.input(x)
    sizes = [(5, 7), (2, 3), (3, 4), (6, 8)]  # (height, width): up, down, identity, x2
    outs = [net.add(Op.RESIZE_BILINEAR, [xi, net.scalar(w), net.scalar(h)], [(2, h, w, 3)])[0] for h, w in sizes]
    got = net.run()
    for k, (h, w) in zip(outs, sizes):
        node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                                coordinate_transformation_mode="asymmetric")
        ref = run_onnx([node], {"x": x.transpose(0, 3, 1, 2)}, [("y", np.float32, None)],
                       initializers={"sizes": np.array([2, 3, h, w], np.int64)})["y"].transpose(0, 2, 3, 1)
        assert_accumulated(got[k], ref, 4)


def test_resize_bilinear_width_first():
    """Operand 1 is the width (the reference's order): a declared output of [1, 2, 6, 1] must match."""
    net = Net()
    x = np.arange(4, dtype=np.float32).reshape(1, 2, 2, 1)
    net.add(Op.RESIZE_BILINEAR, [net.input(x), net.scalar(6), net.scalar(2)], [(1, 2, 6, 1)])
    got = net.run()[0]
    ref = np.array([0, 1 / 3, 2 / 3, 1, 1, 1], np.float32)
    np.testing.assert_allclose(got[0, :, :, 0], np.stack([ref, ref + 2]), rtol=1e-6)


# ---------------------------------------------------------------- SVDF


def _svdf_oracle(x, wf, wt, bias, state, rank, act):
    batch = x.shape[0]
    filters, memory = wt.shape
    s = state.astype(np.float64).reshape(batch, filters, memory).copy()
    s[:, :, -1] = x.astype(np.float64) @ wf.astype(np.float64).T
    scratch = (s * wt.astype(np.float64)).sum(axis=2)
    out = scratch.reshape(batch, filters // rank, rank).sum(axis=2)
    if bias is not None:
        out = out + bias
    out = {0: out, 1: np.maximum(out, 0), 4: np.tanh(out)}[act]
    new_state = np.concatenate([s[:, :, 1:], np.zeros((batch, filters, 1))], axis=2).reshape(batch, -1)
    return new_state, out


def test_svdf(rng):
    net = Net()
    cases = []
    for batch, n_input, units, rank, memory, with_bias, act in [(2, 3, 4, 1, 5, True, 0), (3, 4, 2, 2, 3, False, 1),
                                                                (1, 2, 3, 3, 1, True, 4)]:
        filters = units * rank
        x = rng.standard_normal((batch, n_input)).astype(np.float32)
        wf = rng.standard_normal((filters, n_input)).astype(np.float32)
        wt = rng.standard_normal((filters, memory)).astype(np.float32)
        bias = rng.standard_normal(units).astype(np.float32) if with_bias else None
        state = rng.standard_normal((batch, memory * filters)).astype(np.float32)
        ins = [net.input(x), net.const(wf), net.const(wt), net.const(bias) if with_bias else net.omitted(),
               net.input(state), net.scalar(rank), net.scalar(act)]
        outs = net.add(Op.SVDF, ins, [(batch, memory * filters), (batch, units)])
        cases.append((outs, _svdf_oracle(x, wf, wt, bias, state, rank, act), n_input + memory + rank))
    got = net.run()
    for (k_state, k_out), (ref_state, ref_out), n in cases:
        assert_accumulated(got[k_state], ref_state, n)
        assert_accumulated(got[k_out], ref_out, n)


# ---------------------------------------------------------------- LSTM


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _lstm_oracle(x, w, h, c, act, cell_clip, proj_clip):
    """Android's LSTMCell equations in float64; w maps operand numbers to arrays (absent = None)."""
    x, h, c = (a.astype(np.float64) for a in (x, h, c))
    w = {k: None if v is None else v.astype(np.float64) for k, v in w.items()}
    f_act = {0: lambda v: v, 1: lambda v: np.maximum(v, 0), 4: np.tanh, 6: _sigmoid}[act]

    def pre(wi, wr, b, peep, state):
        p = x @ w[wi].T + h @ w[wr].T + w[b]
        return p if w.get(peep) is None else p + w[peep] * state

    cifg = w[1] is None
    f = _sigmoid(pre(2, 6, 13, 10, c))
    g = f_act(pre(3, 7, 14, None, c))
    i = 1 - f if cifg else _sigmoid(pre(1, 5, 12, 9, c))
    cell = f * c + i * g
    if cell_clip > 0:
        cell = np.clip(cell, -cell_clip, cell_clip)
    o = _sigmoid(pre(4, 8, 15, 11, cell))
    gated = o * f_act(cell)
    out = gated
    if w[16] is not None:
        out = gated @ w[16].T + (0 if w[17] is None else w[17])
        if proj_clip > 0:
            out = np.clip(out, -proj_clip, proj_clip)
    blocks = ([] if cifg else [i]) + [f_act(cell), 1 - f if cifg else f, gated]
    scratch = np.concatenate(blocks, axis=0).reshape(x.shape[0], -1)
    return scratch, out, cell, out


LSTM_CONFIGS = [  # (cifg, peephole, projection, projection bias, activation, cell_clip, proj_clip)
    (False, False, False, False, 4, 0.0, 0.0),
    (False, True, True, True, 4, 0.5, 0.3),
    (True, True, False, False, 1, 0.0, 0.0),
    (True, False, True, False, 6, 0.8, 0.0),
]


def _lstm_weights(rng, n_input, n_cell, n_output, cifg, peephole, projection, proj_bias):
    def r(*s):
        return (0.5 * rng.standard_normal(s)).astype(np.float32)

    w = {k: r(n_cell, n_input) for k in (1, 2, 3, 4)}
    w.update({k: r(n_cell, n_output) for k in (5, 6, 7, 8)})
    w.update({k: r(n_cell) for k in (9, 10, 11, 12, 13, 14, 15)})
    w[16], w[17] = r(n_output, n_cell), r(n_output)
    if cifg:
        w[1] = w[5] = w[12] = w[9] = None
    if not peephole:
        w[9] = w[10] = w[11] = None
    if not projection:
        w[16] = None
    if not proj_bias:
        w[17] = None
    return w


def test_lstm(rng):
    net = Net()
    cases = []
    batch, n_input, n_cell = 2, 3, 4
    for cifg, peephole, projection, proj_bias, act, cell_clip, proj_clip in LSTM_CONFIGS:
        n_output = 3 if projection else n_cell
        w = _lstm_weights(rng, n_input, n_cell, n_output, cifg, peephole, projection, proj_bias)
        x = rng.standard_normal((batch, n_input)).astype(np.float32)
        h = rng.standard_normal((batch, n_output)).astype(np.float32)
        c = rng.standard_normal((batch, n_cell)).astype(np.float32)
        ins = [net.input(x)] + [net.omitted() if w[k] is None else net.const(w[k]) for k in range(1, 18)]
        ins += [net.input(h), net.input(c), net.scalar(act), net.scalar(cell_clip, T.FLOAT32),
                net.scalar(proj_clip, T.FLOAT32)]
        scratch = (batch, (3 if cifg else 4) * n_cell) if not peephole else (batch, n_cell, 3 if cifg else 4)
        outs = net.add(Op.LSTM, ins, [scratch, (batch, n_output), (batch, n_cell), (batch, n_output)])
        refs = _lstm_oracle(x, w, h, c, act, cell_clip, proj_clip)
        cases.append((outs, (refs[0].reshape(scratch),) + refs[1:]))
    got = net.run()
    for outs, refs in cases:
        for k, ref in zip(outs, refs):
            assert_accumulated(got[k], ref, 16, ulp_per_term=8)


def test_lstm_matches_onnxruntime(rng):
    """Projection-free LSTMs (without and with peepholes) against one step of ONNX LSTM (gates
    i, o, f, c; peepholes i, o, f; ONNX's output-gate peephole also reads the new cell state)."""
    batch, n_input, n = 2, 3, 4
    net = Net()
    cases = []
    for peephole in (False, True):
        w = _lstm_weights(rng, n_input, n, n, False, peephole, False, False)
        x = rng.standard_normal((batch, n_input)).astype(np.float32)
        h = rng.standard_normal((batch, n)).astype(np.float32)
        c = rng.standard_normal((batch, n)).astype(np.float32)
        ins = [net.input(x)] + [net.omitted() if w[k] is None else net.const(w[k]) for k in range(1, 18)]
        ins += [net.input(h), net.input(c), net.scalar(4), net.scalar(0.0, T.FLOAT32),
                net.scalar(0.0, T.FLOAT32)]
        outs = net.add(Op.LSTM, ins, [(batch, 4 * n), (batch, n), (batch, n), (batch, n)])
        cases.append((outs, w, x, h, c, peephole))
    got = net.run()
    for outs, w, x, h, c, peephole in cases:
        inits = {"W": np.concatenate([w[1], w[4], w[2], w[3]])[None],  # ONNX gate order i, o, f, c
                 "R": np.concatenate([w[5], w[8], w[6], w[7]])[None],
                 "B": np.concatenate([w[12], w[15], w[13], w[14], np.zeros(4 * n, np.float32)])[None]}
        names = ["x", "W", "R", "B", "", "h0", "c0"]
        if peephole:
            inits["P"] = np.concatenate([w[9], w[11], w[10]])[None]
            names.append("P")
        node = helper.make_node("LSTM", names, ["", "Y_h", "Y_c"], hidden_size=n)
        ref = run_onnx([node], {"x": x[None], "h0": h[None], "c0": c[None]},
                       [("Y_h", np.float32, None), ("Y_c", np.float32, None)], initializers=inits)
        assert_accumulated(got[outs[1]], ref["Y_h"][0], 8)
        assert_accumulated(got[outs[3]], ref["Y_h"][0], 8)
        assert_accumulated(got[outs[2]], ref["Y_c"][0], 8)


def test_lstm_invalid_operands():
    import estuary

    rng = np.random.default_rng(0)
    w = _lstm_weights(rng, 3, 4, 4, False, False, False, False)
    w[5] = None  # recurrent_to_input omitted while input_to_input is present
    net = Net()
    ins = [net.input(np.zeros((1, 3), np.float32))]
    ins += [net.omitted() if w[k] is None else net.const(w[k]) for k in range(1, 18)]
    ins += [net.input(np.zeros((1, 4), np.float32)), net.input(np.zeros((1, 4), np.float32)), net.scalar(4),
            net.scalar(0.0, T.FLOAT32), net.scalar(0.0, T.FLOAT32)]
    net.add(Op.LSTM, ins, [(1, 16), (1, 4), (1, 4), (1, 4)])
    net.m.identify_inputs_and_outputs(net.inputs, net.outputs)
    net.m.finish()
    with pytest.raises(estuary.VerificationError, match=r"#0 LSTM.*all present or all omitted \(CIFG\)"):
        estuary.compile(net.m)


def test_svdf_header_state_layout_is_refused(rng):
    """The API-27 header's [batch, (memory_size - 1) * num_units * rank] state is not the reference's."""
    import estuary

    net = Net()
    ins = [net.input(np.zeros((1, 2), np.float32)), net.const(np.ones((3, 2), np.float32)),
           net.const(np.ones((3, 4), np.float32)), net.omitted(), net.input(np.zeros((1, 9), np.float32)),
           net.scalar(1), net.scalar(0)]
    net.add(Op.SVDF, ins, [(1, 9), (1, 3)])
    net.m.identify_inputs_and_outputs(net.inputs, net.outputs)
    net.m.finish()
    with pytest.raises(estuary.VerificationError, match=r"#0 SVDF.*state_in .* must have shape .*\[1, 12\]"):
        estuary.compile(net.m)
