"""NNEF sliding-window sampling (§4.3.2-4.3.4) and pooling fragments (§4.9.3) against float64 numpy
implementations of the spec's formulas (written here, element by element), plus onnxruntime's
linear Resize for multilinear_upsample; one compiled graph."""
import itertools
import math

import numpy as np
import pytest

from helpers import assert_accumulated, assert_exact
from tests.importers.nnef.util import graph_text, run, write_model

rng = np.random.default_rng(11)
X = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
D = rng.standard_normal((2, 3, 3, 4)).astype(np.float32)
U = rng.standard_normal((2, 3, 4, 6)).astype(np.float32)


def ext(x, idx, border):
    """The spec's extended input at multi-index idx (None: an 'ignore' border element)."""
    out = []
    for i, z in zip(idx, x.shape):
        if 0 <= i < z:
            out.append(i)
        elif border == "ignore":
            return None
        elif border == "constant":
            return 0.0
        elif border == "replicate":
            out.append(min(max(i, 0), z - 1))
        elif border == "reflect":
            out.append(-i if i < 0 else 2 * z - 2 - i)
        else:  # reflect-even
            out.append(-i - 1 if i < 0 else 2 * z - 1 - i)
    return float(x[tuple(out)])


def auto_pad(up, size, stride, dilation):
    pads = []
    for X_, f, s, d in zip(up, size, stride, dilation):
        t = max((math.ceil(X_ / s) - 1) * s + (f - 1) * d + 1 - X_, 0)
        pads.append((t // 2, t - t // 2))
    return pads


def geo(x, size, padding, stride, dilation, up=None):
    r = x.ndim
    stride, dilation = stride or [1] * r, dilation or [1] * r
    padding = padding or auto_pad(up or x.shape, size, stride, dilation)
    return stride, dilation, padding


def down_shape(shape, size, padding, stride, dilation):
    return [(p + X_ + q - ((f - 1) * d + 1)) // s + 1
            for X_, f, (p, q), s, d in zip(shape, size, padding, stride, dilation)]


def window_values(x, o, size, padding, stride, dilation, border):
    for j in itertools.product(*[range(f) for f in size]):
        yield ext(x, [oi * s + ji * d - p for oi, ji, s, d, (p, _) in zip(o, j, stride, dilation, padding)], border)


def ref_box(x, size, border="constant", padding=None, stride=None, dilation=None, normalize=False):
    stride, dilation, padding = geo(x, size, padding, stride, dilation)
    out = np.zeros(down_shape(x.shape, size, padding, stride, dilation))
    for o in np.ndindex(*out.shape):
        vals = [v for v in window_values(x, o, size, padding, stride, dilation, border) if v is not None]
        out[o] = sum(vals)
        if normalize:
            out[o] /= max(len(vals), 1) if border == "ignore" else math.prod(size)
    return out


def ref_argmax(x, size, border="constant", padding=None, stride=None, dilation=None):
    stride, dilation, padding = geo(x, size, padding, stride, dilation)
    out = np.zeros(down_shape(x.shape, size, padding, stride, dilation), np.int32)
    for o in np.ndindex(*out.shape):
        vals = [-np.inf if v is None else v for v in window_values(x, o, size, padding, stride, dilation, border)]
        out[o] = int(np.argmax(vals))  # first index on ties
    return out


def ref_sample(x, index, size, border="constant", padding=None, stride=None, dilation=None):
    stride, dilation, padding = geo(x, size, padding, stride, dilation)
    out = np.zeros(index.shape)
    for o in np.ndindex(*out.shape):
        out[o] = list(window_values(x, o, size, padding, stride, dilation, border))[index[o]]
    return out


def ref_debox(x, size, out_shape, border="constant", padding=None, stride=None, dilation=None, normalize=False):
    stride, dilation, padding = geo(x, size, padding, stride, dilation, up=out_shape)
    out = np.zeros(out_shape)
    for i in np.ndindex(*out.shape):
        total, count = 0.0, 0
        for j in itertools.product(*[range(f) for f in size]):
            m = [ii + p - jj * d for ii, jj, d, (p, _) in zip(i, j, dilation, padding)]
            if any(mi % s for mi, s in zip(m, stride)):
                continue
            v = ext(x, [mi // s for mi, s in zip(m, stride)], border)
            if v is not None:
                total, count = total + v, count + 1
        out[i] = total / ((max(count, 1) if border == "ignore" else math.prod(size)) if normalize else 1)
    return out


def ref_desample(x, index, size, out_shape, padding=None, stride=None, dilation=None):
    stride, dilation, padding = geo(x, size, padding, stride, dilation, up=out_shape)
    out = np.zeros(out_shape)
    kernel = list(itertools.product(*[range(f) for f in size]))
    for o in np.ndindex(*x.shape):
        j = kernel[index[o]]
        pos = [oi * s + ji * d - p for oi, ji, s, d, (p, _) in zip(o, j, stride, dilation, padding)]
        if all(0 <= q < z for q, z in zip(pos, out_shape)):
            out[tuple(pos)] += x[o]
    return out


def ref_upsample(x, factor, method, border):
    """Separable 1-D linear interpolation per the normative text of §4.3.4."""
    y = x.astype(np.float64)
    for axis, f in enumerate(factor, start=2):
        n = y.shape[axis]
        moved = np.moveaxis(y, axis, -1)
        out = np.zeros(moved.shape[:-1] + (n * f,))
        for i in range(n * f):
            if method == "asymmetric":
                t = i / f
            elif method == "symmetric":
                t = (i - (f - 1) / 2) / f
            else:
                t = i * (n - 1) / (n * f - 1) if n > 1 else 0.0
            j = math.floor(t)
            u = t - j
            for k in np.ndindex(*moved.shape[:-1]):
                line = moved[k]
                a, b = (ext(line, [q], border) for q in (j, j + 1))
                out[k + (i,)] = (1 - u) * a + u * b
        y = np.moveaxis(out, -1, axis)
    return y


P1 = "[(0,0),(0,0),(1,1),(1,1)]"
BOX = {
    "b_const": ("box(x, size = [1,1,3,3], padding = " + P1 + ")",
                ref_box(X, [1, 1, 3, 3], padding=[(0, 0), (0, 0), (1, 1), (1, 1)]), 9),
    "b_ignore": ("box(x, size = [1,1,3,3], border = 'ignore', stride = [1,1,2,2], normalize = true)",
                 ref_box(X, [1, 1, 3, 3], "ignore", stride=[1, 1, 2, 2], normalize=True), 9),
    "b_repl": ("box(x, size = [1,1,2,3], border = 'replicate', padding = [(0,0),(0,0),(1,0),(2,1)], "
               "dilation = [1,1,2,1])",
               ref_box(X, [1, 1, 2, 3], "replicate", [(0, 0), (0, 0), (1, 0), (2, 1)], dilation=[1, 1, 2, 1]), 6),
    "b_refl": ("box(x, size = [1,1,3,3], border = 'reflect', padding = [(0,0),(0,0),(2,1),(1,2)], "
               "stride = [1,1,2,1], normalize = true)",
               ref_box(X, [1, 1, 3, 3], "reflect", [(0, 0), (0, 0), (2, 1), (1, 2)], [1, 1, 2, 1], normalize=True), 9),
    "b_refl_even": ("box(x, size = [1,2,3,1], border = 'reflect-even', padding = [(0,0),(1,0),(1,1),(0,0)])",
                    ref_box(X, [1, 2, 3, 1], "reflect-even", [(0, 0), (1, 0), (1, 1), (0, 0)]), 6),
    "b_negpad": ("box(x, size = [1,1,3,3], padding = [(0,0),(0,0),(-1,1),(0,-1)])",
                 ref_box(X, [1, 1, 3, 3], padding=[(0, 0), (0, 0), (-1, 1), (0, -1)]), 9),
    "b_batch": ("box(x, size = [2,1,1,2], stride = [1,1,1,2], padding = [(0,0),(0,0),(0,0),(0,1)], "
                "border = 'ignore', normalize = true)",
                ref_box(X, [2, 1, 1, 2], "ignore", [(0, 0), (0, 0), (0, 0), (0, 1)], [1, 1, 1, 2], normalize=True), 4),
    "d_const": ("debox(d, size = [1,1,3,3], stride = [1,1,2,2], padding = " + P1 + ")",
                ref_debox(D, [1, 1, 3, 3], [2, 3, 5, 7], padding=[(0, 0), (0, 0), (1, 1), (1, 1)],
                          stride=[1, 1, 2, 2]), 9),
    "d_repl": ("debox(d, size = [1,1,2,2], stride = [1,1,2,2], border = 'replicate', normalize = true, "
               "padding = [(0,0),(0,0),(1,0),(0,1)])",
               ref_debox(D, [1, 1, 2, 2], [2, 3, 5, 7], "replicate", [(0, 0), (0, 0), (1, 0), (0, 1)],
                         [1, 1, 2, 2], normalize=True), 4),
    "d_refl": ("debox(d, size = [1,1,3,2], stride = [1,1,1,2], border = 'reflect', "
               "padding = [(0,0),(0,0),(1,1),(0,1)])",
               ref_debox(D, [1, 1, 3, 2], [2, 3, 3, 7], "reflect", [(0, 0), (0, 0), (1, 1), (0, 1)], [1, 1, 1, 2]), 6),
    "d_ignore": ("debox(d, size = [1,1,3,3], stride = [1,1,2,2], border = 'ignore', normalize = true, "
                 "output_shape = [2,3,6,8])",
                 ref_debox(D, [1, 1, 3, 3], [2, 3, 6, 8], "ignore", stride=[1, 1, 2, 2], normalize=True), 9),
    "d_refl_even": ("debox(d, size = [1,1,2,2], dilation = [1,1,2,1], border = 'reflect-even', "
                    "padding = [(0,0),(0,0),(1,1),(1,0)])",
                    ref_debox(D, [1, 1, 2, 2], [2, 3, 3, 4], "reflect-even", [(0, 0), (0, 0), (1, 1), (1, 0)],
                              dilation=[1, 1, 2, 1]), 4),
    "area_down": ("area_downsample(u, factor = [2,3])", ref_box(U, [1, 1, 2, 3], stride=[1, 1, 2, 3],
                                                                padding=[(0, 0)] * 4, normalize=True), 6),
}
ARGMAX = {  # name: (size, border, padding, stride, dilation)
    "ignore": ([1, 1, 3, 3], "ignore", [(0, 0), (0, 0), (1, 1), (1, 1)], [1, 1, 2, 2], None),
    "const": ([1, 1, 2, 2], "constant", None, [1, 1, 2, 2], None),
    "repl": ([1, 1, 3, 2], "replicate", [(0, 0), (0, 0), (1, 1), (1, 1)], None, [1, 1, 1, 2]),
    "refl": ([1, 2, 2, 2], "reflect", [(0, 0), (1, 0), (1, 0), (0, 1)], [1, 1, 2, 1], None),
}


def _args(size, border, padding, stride, dilation):
    text = f"size = {size}, border = '{border}'"
    if padding is not None:
        text += ", padding = [" + ",".join(f"({p},{q})" for p, q in padding) + "]"
    if stride is not None:
        text += f", stride = {stride}"
    if dilation is not None:
        text += f", dilation = {dilation}"
    return text


INDEX_REF = {k: ref_argmax(X, *v) for k, v in ARGMAX.items()}
EXACT = {
    "near_down": ("nearest_downsample(u, factor = [2,3])", U[:, :, ::2, ::3]),
    "near_up": ("nearest_upsample(u, factor = [2,3])", U.repeat(2, axis=2).repeat(3, axis=3)),
}
for _k, _v in ARGMAX.items():
    EXACT[f"a_{_k}"] = (f"argmax_pool(x, {_args(*_v)})", INDEX_REF[_k])
    EXACT[f"s_{_k}"] = (f"sample(x, a_{_k}, {_args(*_v)})", ref_sample(X, INDEX_REF[_k], *_v))
    EXACT[f"mp_{_k}"] = (f"max_pool(x, {_args(*_v)})", ref_sample(X, INDEX_REF[_k], *_v))
EXACT["mpi_out"] = (None, ref_sample(X, INDEX_REF["repl"], *ARGMAX["repl"]))
EXACT["mpi_index"] = (None, INDEX_REF["repl"])
EXACT["mpi2_out"] = (None, ref_sample(X, INDEX_REF["ignore"], *ARGMAX["ignore"]))  # down-scaling index
EXACT["mpi2_index"] = (None, INDEX_REF["ignore"])
EXACT["mp_general"] = ("max_pool(x, size = [1,3,2,2], border = 'replicate', padding = [(0,0),(1,1),(0,0),(1,0)])",
                       ref_sample(X, ref_argmax(X, [1, 3, 2, 2], "replicate", [(0, 0), (1, 1), (0, 0), (1, 0)]),
                                  [1, 3, 2, 2], "replicate", [(0, 0), (1, 1), (0, 0), (1, 0)]))
POOL = {
    "ap_ignore": ("avg_pool(x, size = [1,1,3,3], border = 'ignore', padding = " + P1 + ", stride = [1,1,2,2])",
                  ref_box(X, [1, 1, 3, 3], "ignore", [(0, 0), (0, 0), (1, 1), (1, 1)], [1, 1, 2, 2],
                          normalize=True), 9),
    "ap_const": ("avg_pool(x, size = [1,1,3,2], padding = [(0,0),(0,0),(1,1),(0,1)])",
                 ref_box(X, [1, 1, 3, 2], padding=[(0, 0), (0, 0), (1, 1), (0, 1)], normalize=True), 6),
    "ap_refl": ("avg_pool(x, size = [1,1,3,3], border = 'reflect', dilation = [1,1,2,1])",
                ref_box(X, [1, 1, 3, 3], "reflect", dilation=[1, 1, 2, 1], normalize=True), 9),
    "ap_general": ("avg_pool(x, size = [2,1,1,3], border = 'replicate', padding = [(0,1),(0,0),(0,0),(1,1)])",
                   ref_box(X, [2, 1, 1, 3], "replicate", [(0, 1), (0, 0), (0, 0), (1, 1)], normalize=True), 6),
    "rms": ("rms_pool(x, size = [1,1,2,2], stride = [1,1,2,2])",
            np.sqrt(ref_box(X.astype(np.float64) ** 2, [1, 1, 2, 2], stride=[1, 1, 2, 2], normalize=True)), 8),
    "des": ("desample(mp_ignore, a_ignore, " + _args(*ARGMAX["ignore"]).replace("'ignore'", "'constant'")
            + ", output_shape = [2,3,6,7])",
            ref_desample(ref_sample(X, INDEX_REF["ignore"], *ARGMAX["ignore"]), INDEX_REF["ignore"],
                         [1, 1, 3, 3], [2, 3, 6, 7], ARGMAX["ignore"][2], ARGMAX["ignore"][3]), 4),
}
UPSAMPLE = [("symmetric", "replicate"), ("symmetric", "constant"), ("asymmetric", "replicate"),
            ("asymmetric", "constant"), ("aligned", "replicate"), ("aligned", "constant"),
            ("symmetric", "reflect"), ("asymmetric", "reflect-even")]
for _m, _b in UPSAMPLE:
    POOL[f"up_{_m}_{_b}".replace("-", "_")] = (
        f"multilinear_upsample(u, factor = [2,3], method = '{_m}', border = '{_b}')",
        ref_upsample(U, [2, 3], _m, _b), 2)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    body = [f"{k} = {e};" for group in (BOX, EXACT, POOL) for k, (e, *_) in group.items() if e]
    body.append("mpi_out, mpi_index = max_pool_with_index(x, " + _args(*ARGMAX["repl"]) + ");")
    body.append("mpi2_out, mpi2_index = max_pool_with_index(x, " + _args(*ARGMAX["ignore"]) + ");")
    outputs = [k for group in (BOX, EXACT, POOL) for k in group]
    text = graph_text({"x": X.shape, "d": D.shape, "u": U.shape}, outputs, "\n".join(body))
    return run(write_model(tmp_path_factory.mktemp("sampling"), text), {"x": X, "d": D, "u": U})


@pytest.mark.parametrize("name", sorted(BOX) + sorted(POOL))
def test_sums(results, name):
    _, expected, n = {**BOX, **POOL}[name]
    assert_accumulated(results[name], expected, n)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact(results, name):
    expected = EXACT[name][1]
    if expected.dtype.kind == "i":
        assert results[name].dtype == np.int32
    assert_exact(results[name], expected)


@pytest.mark.parametrize("statement,message", [
    ("y = box(x, size = [1,1,3,3], border = 'wrap');", "border 'wrap' must be one of"),
    ("y = multilinear_upsample(x, factor = [2,2], method = 'cubic');", "method 'cubic' must be"),
    ("y = box(x, size = [1,1,3,3], border = 'reflect', padding = [(0,0),(0,0),(6,6),(1,1)]);",
     "'reflect' padding"),
])
def test_invalid_arguments_name_the_operation(tmp_path, statement, message):
    from estuary.base.errors import VerificationError

    folder = write_model(tmp_path, graph_text({"x": X.shape}, ["y"], statement))
    with pytest.raises(VerificationError) as err:
        run(folder, {"x": X})
    text = str(err.value)
    assert message in text and "graph.nnef:6" in text and "'y'" in text, text


@pytest.mark.parametrize("method,mode", [("symmetric", "half_pixel"), ("asymmetric", "asymmetric"),
                                         ("aligned", "align_corners")])
def test_upsample_matches_onnxruntime(results, method, mode):
    """With border 'replicate' the normative formulas are onnxruntime's linear Resize."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    scales = helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 3])
    node = helper.make_node("Resize", ["u", "", "scales"], ["y"], mode="linear",
                            coordinate_transformation_mode=mode)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("u", TensorProto.FLOAT, U.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [scales])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    sess = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    expected = sess.run(None, {"u": U})[0]
    assert_accumulated(results[f"up_{method}_replicate"], expected.astype(np.float64), 2)


# ---------------------------------------------------------------- RoI operations (§4.6)

F = rng.standard_normal((2, 3, 8, 9)).astype(np.float32)
RA = np.array([[0.6, 1.2, 6.3, 7.9], [2.2, 0.4, 7.7, 4.6], [-0.4, 5.3, 3.6, 9.4]], np.float32)  # y0 x0 y1 x1
RP = np.array([[0.6, 1.2, 6.3, 7.9], [2.2, 0.4, 7.7, 4.6], [-1.4, 5.3, 3.6, 10.2]], np.float32)
BATCH = np.array([0, 1, 1])


def ref_resample(f, rois, batch, size, method):
    """Per RoI, separable linear interpolation at the method's source coordinates, edges replicated."""
    out = np.zeros((len(rois), f.shape[1]) + tuple(size))

    def coords(lo, hi, n):
        r = hi - lo
        i = np.arange(n)
        if method == "symmetric":
            return lo + (i + 0.5) * r / n - 0.5
        if method == "asymmetric":
            return lo + i * r / n
        return lo + i * (r - 1) / (n - 1)

    def sample(line, t):
        j = math.floor(t)
        u = t - j
        at = [line[min(max(q, 0), len(line) - 1)] for q in (j, j + 1)]
        return (1 - u) * at[0] + u * at[1]

    for n, (roi, b) in enumerate(zip(rois.astype(np.float64), batch)):
        ys, xs = coords(roi[0], roi[2], size[0]), coords(roi[1], roi[3], size[1])
        for ch in range(f.shape[1]):
            img = f[b, ch].astype(np.float64)
            rows = np.array([[sample(img[:, w], t) for w in range(img.shape[1])] for t in ys])
            out[n, ch] = np.array([[sample(row, t) for t in xs] for row in rows])
    return out


def ref_roi_pool(f, rois, batch, size, kind):
    """Rounded RoI, cells of ceil(r / p) strided floor(r / p); outside positions count as 0."""
    out = np.zeros((len(rois), f.shape[1]) + tuple(size))
    for n, (roi, b) in enumerate(zip(rois.astype(np.float64), batch)):
        y0, x0, y1, x1 = np.floor(roi + 0.5).astype(int)
        ch_, cw = math.ceil((y1 - y0) / size[0]), math.ceil((x1 - x0) / size[1])
        sh, sw = (y1 - y0) // size[0], (x1 - x0) // size[1]
        for i in range(size[0]):
            for j in range(size[1]):
                vals = np.array([[ext(f[b], [ch, y0 + i * sh + a, x0 + j * sw + q], "constant")
                                  for a in range(ch_) for q in range(cw)] for ch in range(f.shape[1])])
                out[n, :, i, j] = vals.mean(axis=1) if kind == "avg" else vals.max(axis=1)
    return out


def _blocks(v, rate, fn):
    n, c, h, w = v.shape
    return fn(v.reshape(n, c, h // rate[0], rate[0], w // rate[1], rate[1]), axis=(3, 5))


ROI = {
    # interpolation at coordinates computed in float32 from the run-time rois: a wider budget
    "rr_sym": ("roi_resample(f, ra, bi, output_size = [4, 5], method = 'symmetric')",
               ref_resample(F, RA, BATCH, [4, 5], "symmetric"), 8),
    "rr_asym": ("roi_resample(f, ra, bi, output_size = [3, 4], method = 'asymmetric')",
                ref_resample(F, RA, BATCH, [3, 4], "asymmetric"), 8),
    "rr_aligned": ("roi_resample(f, ra, bi, output_size = [3, 4], method = 'aligned')",
                   ref_resample(F, RA, BATCH, [3, 4], "aligned"), 8),
    "ara": ("avg_roi_align(f, ra, bi, output_size = [2, 3], sampling_rate = [2, 2])",
            _blocks(ref_resample(F, RA, BATCH, [4, 6], "symmetric"), [2, 2], np.mean), 8),
    "mra": ("max_roi_align(f, ra, bi, output_size = [2, 3], sampling_rate = [2, 1], resize_method = 'asymmetric')",
            _blocks(ref_resample(F, RA, BATCH, [4, 3], "asymmetric"), [2, 1], np.max), 2),
    "arp": ("avg_roi_pool(f, rp, bi, output_size = [2, 3])", ref_roi_pool(F, RP, BATCH, [2, 3], "avg"), 12),
    "mrp": ("max_roi_pool(f, rp, bi, output_size = [2, 3])", ref_roi_pool(F, RP, BATCH, [2, 3], "max"), 0),
}


@pytest.fixture(scope="module")
def roi_results(tmp_path_factory):
    body = ["bi = constant<integer>(shape = [3], value = [0, 1, 1]);"] + [f"{k} = {e};" for k, (e, _, _) in ROI.items()]
    text = graph_text({"f": F.shape, "ra": RA.shape, "rp": RP.shape}, list(ROI), "\n".join(body))
    return run(write_model(tmp_path_factory.mktemp("roi"), text), {"f": F, "ra": RA, "rp": RP})


@pytest.mark.parametrize("name", sorted(ROI))
def test_roi(roi_results, name):
    _, expected, n = ROI[name]
    if n == 0:
        assert_exact(roi_results[name], expected)
    else:
        assert_accumulated(roi_results[name], expected, n)


def test_avg_roi_align_matches_onnxruntime(roi_results):
    """avg_roi_align ('symmetric') is ONNX RoiAlign with half_pixel coordinates (rois as x0 y0 x1 y1)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper

    node = helper.make_node("RoiAlign", ["f", "rois", "batch"], ["y"], mode="avg", output_height=2, output_width=3,
                            sampling_ratio=2, spatial_scale=1.0, coordinate_transformation_mode="half_pixel")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("f", TensorProto.FLOAT, F.shape),
                                            helper.make_tensor_value_info("rois", TensorProto.FLOAT, RA.shape),
                                            helper.make_tensor_value_info("batch", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = sess.run(None, {"f": F, "rois": RA[:, [1, 0, 3, 2]].copy(), "batch": BATCH.astype(np.int64)})[0]
    assert_accumulated(roi_results["ara"], expected.astype(np.float64), 8)
