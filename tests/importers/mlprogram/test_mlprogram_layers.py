"""Convolution, pooling, normalization, reductions, linear algebra and data movement of MIL
programs against float64 numpy formulas (coremltools' op definitions)."""
import numpy as np

from tests.importers.mlprogram.util import close, run, save


def conv2d_ref(x, w, b, stride, pads, dil, groups):
    """Direct float64 convolution: x [N,C,H,W], w [O,C/g,KH,KW], pads (top, bottom, left, right)."""
    x = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]))
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h - (kh - 1) * dil[0] - 1) // stride[0] + 1
    ow = (wd - (kw - 1) * dil[1] - 1) // stride[1] + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = x[:, g * cg:(g + 1) * cg, i * dil[0]:i * dil[0] + stride[0] * oh:stride[0],
                          j * dil[1]:j * dil[1] + stride[1] * ow:stride[1]]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    return y + (0 if b is None else b.reshape(1, -1, 1, 1))


def test_conv_pool_norm(tmp_path):
    from coremltools.converters.mil import Builder as mb

    rng = np.random.default_rng(2)
    w = rng.standard_normal((6, 2, 3, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    w1 = rng.standard_normal((4, 4, 3)).astype(np.float32)
    wt = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    mean, var = rng.standard_normal(4).astype(np.float32), rng.uniform(0.5, 2, 4).astype(np.float32)
    gamma, beta = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 4, 7, 8)), mb.TensorSpec(shape=(2, 4, 9))])
    def prog(x, s):
        return (
            mb.conv(x=x, weight=w, bias=b, strides=[2, 1], pad_type="custom", pad=[1, 0, 2, 1], groups=2,
                    name="conv_custom"),
            mb.conv(x=x, weight=w, pad_type="same", dilations=[2, 1], groups=2, name="conv_same"),
            mb.conv(x=s, weight=w1, pad_type="valid", strides=[2], name="conv1d"),
            mb.conv_transpose(x=x, weight=wt, strides=[2, 2], pad_type="valid", name="deconv"),
            mb.max_pool(x=x, kernel_sizes=[3, 2], strides=[2, 2], pad_type="valid", name="maxpool"),
            mb.avg_pool(x=x, kernel_sizes=[3, 3], strides=[1, 1], pad_type="custom", pad=[1, 1, 1, 1],
                        exclude_padding_from_average=False, name="avgpool_incl"),
            mb.avg_pool(x=x, kernel_sizes=[3, 3], strides=[2, 2], pad_type="same",
                        exclude_padding_from_average=True, name="avgpool_excl"),
            mb.batch_norm(x=x, mean=mean, variance=var, gamma=gamma, beta=beta, epsilon=1e-3, name="bn"),
            mb.instance_norm(x=x, gamma=gamma, beta=beta, epsilon=1e-4, name="inorm"),
            mb.layer_norm(x=x, axes=[-1], epsilon=1e-5, name="lnorm"),
            mb.l2_norm(x=x, epsilon=1e-6, name="l2norm"),
        )

    x = rng.standard_normal((1, 4, 7, 8)).astype(np.float32)
    s = rng.standard_normal((2, 4, 9)).astype(np.float32)
    got = run(save(prog, tmp_path), {"x": x, "s": s})
    xd = x.astype(np.float64)
    close(got["conv_custom"], conv2d_ref(xd, w.astype(np.float64), b, (2, 1), (1, 0, 2, 1), (1, 1), 2), 1e-5, 1e-5)
    # same: output = input size; total padding (k - 1) * d along H (4 -> 2, 2) and W (2 -> 1, 1)
    close(got["conv_same"], conv2d_ref(xd, w.astype(np.float64), None, (1, 1), (2, 2, 1, 1), (2, 1), 2), 1e-5, 1e-5)
    close(got["conv1d"], conv2d_ref(s[:, :, None].astype(np.float64), w1[:, :, None].astype(np.float64), None,
                                    (1, 2), (0, 0, 0, 0), (1, 1), 1)[:, :, 0], 1e-5, 1e-5)
    # transposed conv: scatter each input pixel times the kernel
    wtd = wt.astype(np.float64)
    y = np.zeros((1, 3, 15, 17))
    for i in range(7):
        for j in range(8):
            y[:, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3] += np.einsum("nc,cohw->nohw", xd[:, :, i, j], wtd)
    close(got["deconv"], y, 1e-5, 1e-5)
    mp = np.stack([np.stack([xd[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 2].max(axis=(1, 2)) for j in range(4)], -1)
                   for i in range(3)], -2)[None]
    close(got["maxpool"], mp)
    xp = np.pad(xd, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ap = np.stack([np.stack([xp[0, :, i:i + 3, j:j + 3].mean(axis=(1, 2)) for j in range(8)], -1)
                   for i in range(7)], -2)[None]
    close(got["avgpool_incl"], ap)
    # same, stride 2: out 4 x 4, total pad H = (4-1)*2+3-7 = 2 -> (1, 1); W = (4-1)*2+3-8 = 1 -> (0, 1)
    ones = np.pad(np.ones((7, 8)), ((1, 1), (0, 1)))
    xq = np.pad(xd, ((0, 0), (0, 0), (1, 1), (0, 1)))
    ae = np.stack([np.stack([xq[0, :, 2 * i:2 * i + 3, 2 * j:2 * j + 3].sum(axis=(1, 2))
                             / ones[2 * i:2 * i + 3, 2 * j:2 * j + 3].sum() for j in range(4)], -1)
                   for i in range(4)], -2)[None]
    close(got["avgpool_excl"], ae)
    r = lambda v: v.reshape(1, -1, 1, 1).astype(np.float64)  # noqa: E731
    close(got["bn"], (xd - r(mean)) / np.sqrt(r(var) + 1e-3) * r(gamma) + r(beta), 1e-5, 1e-5)
    m, v = xd.mean(axis=(2, 3), keepdims=True), xd.var(axis=(2, 3), keepdims=True)
    close(got["inorm"], (xd - m) / np.sqrt(v + 1e-4) * r(gamma) + r(beta), 1e-5, 1e-5)
    m, v = xd.mean(axis=-1, keepdims=True), xd.var(axis=-1, keepdims=True)
    close(got["lnorm"], (xd - m) / np.sqrt(v + 1e-5), 1e-5, 1e-5)
    close(got["l2norm"], xd / np.sqrt(np.maximum((xd ** 2).sum(axis=(1, 2, 3), keepdims=True), 1e-6)))


def test_reductions_linear_shapes(tmp_path):
    from coremltools.converters.mil import Builder as mb

    rng = np.random.default_rng(3)
    wl = rng.standard_normal((5, 4)).astype(np.float32)
    bl = rng.standard_normal(5).astype(np.float32)
    reductions = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_prod": np.prod, "reduce_max": np.max,
                  "reduce_min": np.min, "reduce_l1_norm": lambda v, **k: np.abs(v).sum(**k),
                  "reduce_l2_norm": lambda v, **k: np.sqrt((v ** 2).sum(**k)),
                  "reduce_log_sum": lambda v, **k: np.log(v.sum(**k)),
                  "reduce_log_sum_exp": lambda v, **k: np.log(np.exp(v).sum(**k)),
                  "reduce_sum_square": lambda v, **k: (v ** 2).sum(**k)}

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3, 4)), mb.TensorSpec(shape=(2, 4, 3)),
                             mb.TensorSpec(shape=(4, 3, 5))])
    def prog(x, y, z):
        outs = [getattr(mb, n)(x=mb.abs(x=x) if n == "reduce_log_sum" else x, axes=[1, -1], keep_dims=k,
                               name=f"{n}_{k}") for n in reductions for k in (True, False)]
        outs += [
            mb.reduce_argmax(x=x, axis=2, keep_dims=False, name="argmax"),
            mb.reduce_argmin(x=x, axis=1, keep_dims=True, name="argmin"),
            mb.linear(x=x, weight=wl, bias=bl, name="linear"),
            mb.matmul(x=x, y=y, name="matmul"),
            mb.matmul(x=x, y=y, transpose_x=True, transpose_y=True, name="matmul_tt"),
            mb.einsum(values=(x, z), equation="chw,whu->chu", name="einsum"),
            mb.reshape(x=x, shape=[4, -1], name="reshape"),
            mb.transpose(x=x, perm=[2, 0, 1], name="transpose"),
            mb.concat(values=(x, x), axis=1, name="concat"),
            mb.concat(values=(x, x), axis=2, interleave=True, name="concat_il"),
            mb.stack(values=(x, x), axis=1, name="stack"),
            mb.squeeze(x=mb.expand_dims(x=x, axes=[0, 3]), axes=[3], name="exp_sq"),
            mb.slice_by_index(x=x, begin=[0, 2, 3], end=[2, 0, 0], stride=[1, -1, -2], end_mask=[False, True, True],
                              name="slice_idx"),
            mb.slice_by_size(x=x, begin=[1, 1, 0], size=[1, -1, 3], name="slice_size"),
            mb.pad(x=x, pad=[1, 2, 0, 1], mode="reflect", name="pad_reflect"),
            mb.pad(x=x, pad=[0, 1, 2, 0], mode="constant", constant_val=1.5, name="pad_const"),
            mb.pad(x=x, pad=[1, 1], mode="replicate", name="pad_edge"),
            mb.tile(x=x, reps=[1, 2, 1], name="tile"),
            mb.reverse(x=x, axes=[0, 2], name="reverse"),
            mb.flatten2d(x=x, axis=2, name="flatten2d"),
        ]
        s0, s1 = mb.split(x=x, split_sizes=[1, 2], axis=1, name="split")
        outs += [mb.identity(x=s0, name="split_a"), mb.identity(x=s1, name="split_b")]
        return tuple(outs)

    x = rng.uniform(0.2, 1.5, (2, 3, 4)).astype(np.float32)
    x[0, 0, :] = [1.0, 0.5, 1.0, 0.2]  # ties: first index wins
    y = rng.standard_normal((2, 4, 3)).astype(np.float32)
    z = rng.standard_normal((4, 3, 5)).astype(np.float32)
    got = run(save(prog, tmp_path), {"x": x, "y": y, "z": z})
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    for n, fn in reductions.items():
        for k in (True, False):
            close(got[f"{n}_{k}"], fn(xd, axis=(1, 2), keepdims=k), 2e-6, 1e-6)
    close(got["argmax"], np.argmax(x, axis=2), 0, 0)
    close(got["argmin"], np.argmin(x, axis=1)[:, None], 0, 0)
    close(got["linear"], xd @ wl.T.astype(np.float64) + bl, 1e-5, 1e-5)
    close(got["matmul"], xd @ yd, 1e-5, 1e-5)
    close(got["matmul_tt"], np.swapaxes(xd, 1, 2) @ np.swapaxes(yd, 1, 2), 1e-5, 1e-5)
    close(got["einsum"], np.einsum("chw,whu->chu", xd, z.astype(np.float64)), 1e-5, 1e-5)
    exact = {
        "reshape": x.reshape(4, -1), "transpose": x.transpose(2, 0, 1), "concat": np.concatenate([x, x], 1),
        "concat_il": np.stack([x, x], 3).reshape(2, 3, 8), "stack": np.stack([x, x], 1), "exp_sq": x[None],
        "slice_idx": x[0:2, 2::-1, 3::-2], "slice_size": x[1:2, 1:, 0:3],
        "pad_reflect": np.pad(x, ((0, 0), (1, 2), (0, 1)), mode="reflect"),
        "pad_const": np.pad(x, ((0, 0), (0, 1), (2, 0)), constant_values=1.5),
        "pad_edge": np.pad(x, ((0, 0), (0, 0), (1, 1)), mode="edge"), "tile": np.tile(x, (1, 2, 1)),
        "reverse": x[::-1, :, ::-1], "flatten2d": x.reshape(6, 4), "split_a": x[:, :1], "split_b": x[:, 1:],
    }
    for n, want in exact.items():
        close(got[n], want, 0, 0)
