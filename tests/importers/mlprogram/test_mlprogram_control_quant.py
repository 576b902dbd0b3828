"""Control flow (cond, while_loop), iOS17 quantize/dequantize, conv_quantized, space/batch
rearrangements, iOS18 slice_update and random ops of MIL programs against numpy."""
import numpy as np
import pytest

from estuary.base.errors import EstuaryError
from tests.importers.mlprogram.util import close, ct, run, save


def test_cond_and_while_loop(tmp_path):
    from coremltools.converters.mil import Builder as mb

    @mb.program(input_specs=[mb.TensorSpec(shape=(2,)), mb.TensorSpec(shape=(1,))])
    def prog(x, p):
        pred = mb.squeeze(x=mb.greater(x=p, y=0.0))
        y = mb.cond(pred=pred, _true_fn=lambda: mb.mul(x=x, y=2.0), _false_fn=lambda: mb.sub(x=x, y=1.0))
        _, v = mb.while_loop(_cond=lambda i, v: mb.less(x=i, y=3),
                             _body=lambda i, v: (mb.add(x=i, y=1), mb.mul(x=v, y=1.5)), loop_vars=(np.int32(0), y))
        return mb.identity(x=v, name="y")

    path = save(prog, tmp_path)
    x = np.array([1.0, 2.0], np.float32)
    for p in (1.0, -1.0):
        got = run(path, {"x": x, "p": np.array([p], np.float32)})["y"]
        close(got, (x * 2.0 if p > 0 else x - 1.0) * 1.5 ** 3, 1e-6, 1e-6)


def test_data_dependent_loop_is_refused(tmp_path):
    from coremltools.converters.mil import Builder as mb

    @mb.program(input_specs=[mb.TensorSpec(shape=(1,))])
    def prog(x):
        _, v = mb.while_loop(_cond=lambda i, v: mb.squeeze(x=mb.less(x=v, y=10.0)),
                             _body=lambda i, v: (mb.add(x=i, y=1), mb.mul(x=v, y=2.0)), loop_vars=(np.int32(0), x))
        return mb.identity(x=v, name="y")

    with pytest.raises(EstuaryError, match="run-time data"):
        run(save(prog, tmp_path), {"x": np.ones(1, np.float32)})


def test_quantize_dequantize_rearrange_update(tmp_path):
    from coremltools.converters.mil import Builder as mb

    c = ct()
    scale = np.array([0.5, 0.25, 0.125], np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 4, 4)), mb.TensorSpec(shape=(2, 4))],
                opset_version=c.target.iOS18)
    def prog(x, u):
        q = mb.quantize(input=x, scale=scale, zero_point=np.array([3, -2, 0], np.int8), axis=1, output_dtype="int8")
        return (
            mb.cast(x=q, dtype="fp32", name="quantized"),
            mb.dequantize(input=q, scale=scale, zero_point=np.array([3, -2, 0], np.int8), axis=1, name="roundtrip"),
            mb.space_to_batch(x=x, block_shape=[2, 2], paddings=[[0, 0], [2, 0]], name="s2b"),
            mb.batch_to_space(x=mb.space_to_batch(x=x, block_shape=[2, 2], paddings=[[0, 0], [2, 0]]),
                              block_shape=[2, 2], crops=[[0, 0], [2, 0]], name="b2s"),
            mb.slice_update(x=mb.reshape(x=x, shape=[6, 8]), update=u, begin=[1, 0], end=[5, 8], stride=[2, 2],
                            name="slice_update"),
        )

    x = (np.arange(48, dtype=np.float32).reshape(1, 3, 4, 4) - 20) * 0.3
    u = np.arange(8, dtype=np.float32).reshape(2, 4) + 100
    got = run(save(prog, tmp_path, target=c.target.iOS18), {"x": x, "u": u})
    zp = np.array([3, -2, 0]).reshape(1, 3, 1, 1)
    q = np.clip(np.round(x.astype(np.float64) / scale.reshape(1, 3, 1, 1)) + zp, -128, 127)
    close(got["quantized"], q, 0, 0)
    close(got["roundtrip"], (q - zp) * scale.reshape(1, 3, 1, 1), 1e-6, 1e-6)
    xp = np.pad(x, ((0, 0), (0, 0), (0, 0), (2, 0)))
    s2b = xp.reshape(1, 3, 2, 2, 3, 2).transpose(3, 5, 0, 1, 2, 4).reshape(4, 3, 2, 3)
    close(got["s2b"], s2b, 0, 0)
    close(got["b2s"], x, 0, 0)
    want = x.reshape(6, 8).copy()
    want[1:5:2, 0:8:2] = u
    close(got["slice_update"], want, 0, 0)


def test_conv_quantized_and_random(tmp_path):
    from coremltools.converters.mil import Builder as mb

    wq = (np.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2) * 7 % 256).astype(np.uint8)
    scale, bias = np.array([0.01, 0.02], np.float32), np.array([-0.5, 0.25], np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 4, 4))])
    def prog(x):
        return (
            mb.conv_quantized(x=x, weight=wq.astype(np.uint8), quantization_type="linear", nbits=8,
                              quant_scale=scale, quant_bias=bias, name="qconv"),
            mb.random_uniform(shape=[4000], low=-1.0, high=3.0, seed=7, name="uniform"),
            mb.random_normal(shape=[4000], mean=2.0, stddev=0.5, seed=7, name="normal"),
            mb.random_bernoulli(shape=[4000], prob=0.25, seed=7, name="bernoulli"),
        )

    x = np.linspace(-1, 1, 48, dtype=np.float32).reshape(1, 3, 4, 4)
    got = run(save(prog, tmp_path), {"x": x})
    w = wq.astype(np.float64) * scale.reshape(2, 1, 1, 1) + bias.reshape(2, 1, 1, 1)
    want = np.zeros((1, 2, 3, 3))
    for i in range(3):
        for j in range(3):
            want[0, :, i, j] = np.einsum("chw,ochw->o", x[0, :, i:i + 2, j:j + 2], w)
    close(got["qconv"], want, 1e-5, 1e-5)
    uni, nor, ber = got["uniform"], got["normal"], got["bernoulli"]
    assert uni.min() >= -1 and uni.max() < 3 and abs(uni.mean() - 1.0) < 0.1
    assert abs(nor.mean() - 2.0) < 0.05 and abs(nor.std() - 0.5) < 0.05
    assert set(np.unique(ber)) <= {0.0, 1.0} and abs(ber.mean() - 0.25) < 0.05


def test_lists_in_a_loop(tmp_path):
    from coremltools.converters.mil import Builder as mb

    @mb.program(input_specs=[mb.TensorSpec(shape=(2,))])
    def prog(x):
        ls = mb.make_list(init_length=1, dynamic_length=True, elem_shape=(2,), dtype="fp32")

        def body(i, v, ls):
            return mb.add(x=i, y=1), mb.mul(x=v, y=2.0), mb.list_write(ls=ls, index=i, value=v)

        _, _, ls = mb.while_loop(_cond=lambda i, v, ls: mb.less(x=i, y=3), _body=body,
                                 loop_vars=(np.int32(0), x, ls))
        ls = mb.list_scatter(ls=ls, indices=np.array([3], np.int32), value=mb.expand_dims(x=x, axes=[0]))
        return (mb.list_gather(ls=ls, indices=np.array([3, 0, 2], np.int32), name="gathered"),
                mb.list_read(ls=ls, index=1, name="read"),
                mb.cast(x=mb.list_length(ls=ls), dtype="fp32", name="length"))

    x = np.array([1.0, -2.0], np.float32)
    got = run(save(prog, tmp_path), {"x": x})
    close(got["gathered"], np.stack([x, x, 4 * x]), 0, 0)
    close(got["read"], 2 * x, 0, 0)
    close(got["length"], np.asarray(4.0), 0, 0)


def test_resize_ios17_and_categorical(tmp_path):
    from coremltools.converters.mil import Builder as mb

    c = ct()

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 2, 3, 4))], opset_version=c.target.iOS17)
    def prog(x):
        logits = np.log(np.array([[0.1, 0.6, 0.3]], np.float32))
        return (
            mb.resize(x=x, shape=np.array([5, 0], np.int32), resized_dims=np.uint32(2),
                      interpolation_mode="LINEAR", sampling_mode="ALIGN_CORNERS", name="linear"),
            mb.resize(x=x, shape=np.array([6, 2], np.int32), resized_dims=np.uint32(2),
                      interpolation_mode="NEAREST_NEIGHBOR", name="nearest"),
            mb.random_categorical(x=logits, size=6000, seed=3, name="categorical"),
        )

    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    got = run(save(prog, tmp_path), {"x": x})
    p = np.arange(5) * 2 / 4
    i0 = np.floor(p).astype(int)
    i1 = np.minimum(i0 + 1, 2)
    f = (p - i0).reshape(1, 1, 5, 1)
    close(got["linear"], x[:, :, i0] * (1 - f) + x[:, :, i1] * f, 1e-6, 1e-6)  # width kept (0)
    close(got["nearest"], x[:, :, [0, 0, 1, 1, 2, 2]][:, :, :, [0, 2]], 0, 0)
    draws = got["categorical"].reshape(-1)
    assert set(np.unique(draws)) <= {0.0, 1.0, 2.0}
    np.testing.assert_allclose(np.bincount(draws.astype(int), minlength=3) / draws.size, [0.1, 0.6, 0.3], atol=0.03)
