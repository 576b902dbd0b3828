"""Gathers, scatters, selection, sorting, generation, resizing and space/depth rearrangements of
MIL programs against numpy formulas of coremltools' op definitions."""
import numpy as np

from tests.importers.mlprogram.util import close, run, save


def test_gather_scatter_select(tmp_path):
    from coremltools.converters.mil import Builder as mb

    idx = np.array([2, 0, -1], np.int32)
    idx_axis = np.array([[[0, 2, 1, 1], [2, 2, 0, 1], [1, 0, 0, 2]]] * 2, np.int32)  # [2, 3, 4] along axis 1
    idx_nd = np.array([[0, 1], [1, 2], [0, 0]], np.int32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3, 4)), mb.TensorSpec(shape=(2, 3, 4))])
    def prog(x, u):
        return (
            mb.gather(x=x, indices=idx, axis=2, name="gather"),
            mb.gather_along_axis(x=x, indices=idx_axis, axis=1, name="gather_axis"),
            mb.gather_nd(x=x, indices=idx_nd, name="gather_nd"),
            mb.scatter(data=x, indices=np.array([1, 0], np.int32), updates=mb.slice_by_size(
                x=u, begin=[0, 0, 0], size=[2, 2, 4]), axis=1, mode="add", name="scatter"),
            mb.scatter_along_axis(data=x, indices=idx_axis, updates=u, axis=1, mode="update",
                                  name="scatter_axis"),
            mb.scatter_nd(data=x, indices=idx_nd, updates=np.full((3, 4), 2.0, np.float32), mode="mul",
                          name="scatter_nd"),
            mb.select(cond=mb.greater(x=x, y=u), a=x, b=u, name="select"),
            mb.band_part(x=x, lower=1, upper=0, name="band"),
            mb.cumsum(x=x, axis=2, exclusive=True, reverse=True, name="cumsum"),
            mb.one_hot(indices=np.array([[1, 3], [0, 2]], np.int32), one_hot_vector_size=4, axis=1,
                       on_value=2.0, off_value=-1.0, name="one_hot"),
            mb.sliding_windows(x=x, axis=2, size=2, stride=2, name="windows"),
            mb.reverse_sequence(x=x, lengths=np.array([2, 3], np.int32), seq_axis=2, batch_axis=0, name="revseq"),
        ) + tuple(mb.topk(x=x, k=2, axis=-1, ascending=False, name="topk")) + (
            mb.argsort(x=x, axis=1, ascending=True, name="argsort"),)

    rng = np.random.default_rng(7)
    x = rng.permutation(24).reshape(2, 3, 4).astype(np.float32)  # distinct values: sorting is unambiguous
    u = rng.standard_normal((2, 3, 4)).astype(np.float32) * 10
    got = run(save(prog, tmp_path), {"x": x, "u": u})
    close(got["gather"], x[:, :, [2, 0, 3]], 0, 0)
    close(got["gather_axis"], np.take_along_axis(x, idx_axis, 1), 0, 0)
    close(got["gather_nd"], np.stack([x[0, 1], x[1, 2], x[0, 0]]), 0, 0)
    want = x.copy()
    want[:, 1] += u[:, 0]
    want[:, 0] += u[:, 1]
    close(got["scatter"], want, 1e-6, 1e-6)
    want = x.copy()
    for b in range(2):
        for k in range(4):
            for i in range(3):  # duplicates: the last update wins
                want[b, idx_axis[b, i, k], k] = u[b, i, k]
    close(got["scatter_axis"], want, 0, 0)
    want = x.copy()
    for a, b in idx_nd:
        want[a, b] *= 2
    close(got["scatter_nd"], want, 0, 0)
    close(got["select"], np.where(x > u, x, u), 0, 0)
    i, j = np.arange(3)[:, None], np.arange(4)[None, :]
    close(got["band"], x * ((i - j <= 1) & (j - i <= 0)), 0, 0)
    close(got["cumsum"], np.flip(np.cumsum(np.flip(x, 2), 2), 2) - x, 1e-6, 1e-6)
    oh = np.full((2, 4, 2), -1.0)
    for a in range(2):
        for b, v in enumerate([[1, 3], [0, 2]][a]):
            oh[a, v, b] = 2.0
    close(got["one_hot"], oh, 0, 0)
    close(got["windows"], np.stack([x[:, :, 0:2], x[:, :, 2:4]], 2), 0, 0)
    rs = x.copy()
    rs[0, :, :2] = x[0, :, 1::-1]
    rs[1, :, :3] = x[1, :, 2::-1]
    close(got["revseq"], rs, 0, 0)
    order = np.argsort(-x, axis=-1)[..., :2]
    topk = [k for k in got if k.startswith("topk")]
    values = [k for k in topk if got[k].dtype == np.float32][0]
    indices = [k for k in topk if got[k].dtype != np.float32][0]
    close(got[values], np.take_along_axis(x, order, -1), 0, 0)
    close(got[indices], order, 0, 0)
    close(got["argsort"], np.argsort(x, axis=1), 0, 0)


def bilinear_ref(x, points_h, points_w):
    def axis(v, p, ax):
        i0 = np.floor(p).astype(int)
        i1 = np.minimum(i0 + 1, v.shape[ax] - 1)
        f = p - i0
        shape = [1] * v.ndim
        shape[ax] = len(p)
        return np.take(v, i0, ax) * (1 - f).reshape(shape) + np.take(v, i1, ax) * f.reshape(shape)
    return axis(axis(x, points_h, 2), points_w, 3)


def test_resize_and_rearrange(tmp_path):
    from coremltools.converters.mil import Builder as mb

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 4, 2, 3))])
    def prog(x):
        return (
            mb.upsample_nearest_neighbor(x=x, scale_factor_height=2, scale_factor_width=3, name="up_nn"),
            mb.resize_nearest_neighbor(x=x, target_size_height=5, target_size_width=2, name="resize_nn"),
            mb.upsample_bilinear(x=x, scale_factor_height=2.5, scale_factor_width=2.0, align_corners=True,
                                 name="up_bl_ac"),
            mb.upsample_bilinear(x=x, scale_factor_height=3.0, scale_factor_width=2.0, align_corners=False,
                                 name="up_bl"),
            mb.resize_bilinear(x=x, target_size_height=5, target_size_width=6, sampling_mode="OFFSET_CORNERS",
                               name="rb_offset"),
            mb.resize_bilinear(x=x, target_size_height=5, target_size_width=6, sampling_mode="DEFAULT",
                               name="rb_default"),
            mb.crop(x=x, crop_height=[1, 0], crop_width=[0, 1], name="crop"),
            mb.depth_to_space(x=x, block_size=2, name="d2s"),
            mb.space_to_depth(x=mb.depth_to_space(x=x, block_size=2), block_size=2, name="s2d"),
            mb.pixel_shuffle(x=x, upscale_factor=2, name="pshuffle"),
            mb.add(x=mb.fill(shape=[1, 4, 2, 3], value=0.5), y=x, name="fill"),
            mb.mul(x=mb.cast(x=mb.range_1d(start=1, end=4, step=1), dtype="fp32"), y=x, name="range"),
        )

    x = np.arange(24, dtype=np.float32).reshape(1, 4, 2, 3) * 0.5 - 3
    got = run(save(prog, tmp_path), {"x": x})
    xd = x.astype(np.float64)
    close(got["up_nn"], np.repeat(np.repeat(x, 2, 2), 3, 3), 0, 0)
    close(got["resize_nn"], x[:, :, [0, 0, 0, 1, 1]][:, :, :, [0, 1]], 0, 0)  # floor(i * in / out)
    close(got["up_bl_ac"], bilinear_ref(xd, np.arange(5) * 1 / 4, np.arange(6) * 2 / 5), 1e-6, 1e-6)
    ph = np.clip((np.arange(6) + 0.5) * 2 / 6 - 0.5, 0, 1)
    pw = np.clip((np.arange(6) + 0.5) * 3 / 6 - 0.5, 0, 2)
    close(got["up_bl"], bilinear_ref(xd, ph, pw), 1e-6, 1e-6)
    dh, dw = max(1, 2 - 1) / 5, max(1, 3 - 1) / 6
    close(got["rb_offset"], bilinear_ref(xd, np.clip(0.5 * dh + np.arange(5) * dh, 0, 1),
                                         np.clip(0.5 * dw + np.arange(6) * dw, 0, 2)), 1e-6, 1e-6)
    close(got["rb_default"], bilinear_ref(xd, np.clip(np.arange(5) * (2 - 2 / 5) / 4, 0, 1),
                                          np.clip(np.arange(6) * (3 - 3 / 6) / 5, 0, 2)), 1e-6, 1e-6)
    close(got["crop"], x[:, :, 1:, :2], 0, 0)
    d2s = x.reshape(1, 2, 2, 1, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(1, 1, 4, 6)  # TF DCR order
    close(got["d2s"], d2s, 0, 0)
    close(got["s2d"], x, 0, 0)
    ps = x.reshape(1, 1, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 1, 4, 6)  # torch CRD order
    close(got["pshuffle"], ps, 0, 0)
    close(got["fill"], x + 0.5, 0, 0)
    close(got["range"], x * np.arange(1, 4), 0, 0)


def nms_ref(boxes, scores, iou_thr, score_thr, max_boxes):
    """Greedy NMS in float64 over center-size boxes (x, y, w, h), scored by the best class."""
    best = scores.max(-1)
    order = sorted(range(len(best)), key=lambda i: (-best[i], i))
    corners = np.stack([boxes[:, 0] - boxes[:, 2] / 2, boxes[:, 1] - boxes[:, 3] / 2,
                        boxes[:, 0] + boxes[:, 2] / 2, boxes[:, 1] + boxes[:, 3] / 2], 1)
    area = boxes[:, 2] * boxes[:, 3]
    kept = []
    for i in order:
        if best[i] <= score_thr:
            continue
        ok = True
        for j in kept:
            iw = max(0.0, min(corners[i, 2], corners[j, 2]) - max(corners[i, 0], corners[j, 0]))
            ih = max(0.0, min(corners[i, 3], corners[j, 3]) - max(corners[i, 1], corners[j, 1]))
            inter = iw * ih
            if inter / (area[i] + area[j] - inter) > iou_thr:
                ok = False
                break
        if ok:
            kept.append(i)
    return kept[:max_boxes]


def test_non_maximum_suppression(tmp_path):
    from coremltools.converters.mil import Builder as mb

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 6, 4)), mb.TensorSpec(shape=(1, 6, 2))])
    def prog(boxes, scores):
        b, s, i, n = mb.non_maximum_suppression(boxes=boxes, scores=scores, iou_threshold=0.4,
                                                score_threshold=0.2, max_boxes=4)
        return (mb.identity(x=b, name="boxes_out"), mb.identity(x=s, name="scores_out"),
                mb.identity(x=i, name="indices"), mb.identity(x=n, name="count"))

    boxes = np.array([[[0.5, 0.5, 1, 1], [0.55, 0.5, 1, 1], [2, 2, 1, 1], [2.1, 2.1, 1, 1], [4, 4, 0.5, 0.5],
                       [6, 6, 1, 1]]], np.float32)
    scores = np.array([[[0.9, 0.1], [0.3, 0.8], [0.5, 0.6], [0.7, 0.1], [0.15, 0.1], [0.3, 0.25]]], np.float32)
    got = run(save(prog, tmp_path), {"boxes": boxes, "scores": scores})
    kept = nms_ref(boxes[0].astype(np.float64), scores[0].astype(np.float64), 0.4, 0.2, 4)
    close(got["count"], np.array([len(kept)]), 0, 0)
    close(got["indices"], np.array([kept + [-1] * (4 - len(kept))]), 0, 0)
    want_boxes = np.zeros((1, 4, 4), np.float32)
    want_boxes[0, :len(kept)] = boxes[0, kept]
    want_scores = np.zeros((1, 4, 2), np.float32)
    want_scores[0, :len(kept)] = scores[0, kept]
    close(got["boxes_out"], want_boxes, 0, 0)
    close(got["scores_out"], want_scores, 0, 0)


def crop_ref(img, y1, x1, y2, x2, th, tw, pad):
    """Bilinear samples at points evenly on [y1, y2] x [x1, x2] of img [C, H, W]; points outside
    the image give `pad` (or are clamped when pad is None)."""
    c, h, w = img.shape
    out = np.zeros((c, th, tw))
    for i, py in enumerate(np.linspace(y1, y2, th)):
        for j, px in enumerate(np.linspace(x1, x2, tw)):
            if pad is not None and not (0 <= py <= h - 1 and 0 <= px <= w - 1):
                out[:, i, j] = pad
                continue
            qy, qx = min(max(py, 0), h - 1), min(max(px, 0), w - 1)
            y0, x0 = int(np.floor(qy)), int(np.floor(qx))
            yb, xb = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
            fy, fx = qy - y0, qx - x0
            out[:, i, j] = ((img[:, y0, x0] * (1 - fx) + img[:, y0, xb] * fx) * (1 - fy)
                            + (img[:, yb, x0] * (1 - fx) + img[:, yb, xb] * fx) * fy)
    return out


def test_crop_resize(tmp_path):
    from coremltools.converters.mil import Builder as mb

    from .util import ct

    c = ct()
    boxes = np.array([[0.5, 1.0, 3.5, 4.0], [-1.0, 0.0, 2.0, 6.5]], np.float32)  # second box leaves the image

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3, 5, 6)), mb.TensorSpec(shape=(2, 4))],
                opset_version=c.target.iOS17)
    def prog17(x, b):
        return mb.crop_resize(x=x, boxes=b, box_indices=np.array([1, 0], np.int32), target_height=3, target_width=4,
                              sampling_mode="ALIGN_CORNERS", pad_value=-1.0, name="crops")

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3, 5, 6)), mb.TensorSpec(shape=(2, 1, 4, 1, 1))],
                opset_version=c.target.iOS15)
    def prog15(x, roi):
        return mb.crop_resize(x=x, roi=roi, target_height=3, target_width=4, sampling_mode="ALIGN_CORNERS",
                              box_coordinate_mode="CORNERS_WIDTH_FIRST", name="crops")

    x = np.random.default_rng(11).standard_normal((2, 3, 5, 6)).astype(np.float32)
    got = run(save(prog17, tmp_path, name="c17", target=c.target.iOS17), {"x": x, "b": boxes})["crops"]
    want = np.stack([crop_ref(x[k].astype(np.float64), *bx, 3, 4, -1.0) for k, bx in zip([1, 0], boxes)])
    close(got, want, 1e-5, 1e-5)
    roi = np.array([[1.0, 0.5, 4.0, 3.5], [0.0, -1.0, 6.5, 2.0]], np.float32).reshape(2, 1, 4, 1, 1)
    got = run(save(prog15, tmp_path, name="c15", target=c.target.iOS15), {"x": x, "roi": roi})["crops"]
    want = np.stack([np.stack([crop_ref(x[k].astype(np.float64), *bx, 3, 4, None) for k in range(2)])
                     for bx in boxes])  # every image cropped by every box; iOS15 clamps outside points
    close(got, want, 1e-5, 1e-5)


def batched_take(x, idx, b, axis):
    """numpy oracle of gather with batch_dims b (tf.gather's rule): one np.take per batch position."""
    xs, lead = x.reshape((-1,) + x.shape[b:]), idx.reshape((-1,) + idx.shape[b:])
    out = np.stack([np.take(xr, ir, axis=axis - b) for xr, ir in zip(xs, lead)])
    return out.reshape(x.shape[:b] + out.shape[1:])


def test_gather_batch_dims(tmp_path):
    """iOS16+ batch_dims of gather (run-time and constant indices, negatives) and gather_nd."""
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    rng = np.random.default_rng(11)
    const_idx = rng.integers(-4, 4, size=(2, 3, 5)).astype(np.int32)  # batch [2, 3], gathered along x axis 3
    nd_idx = rng.integers(0, 3, size=(2, 6, 2)).astype(np.int32)  # per batch row: (axis 1, axis 2) pairs

    import coremltools as ct

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3, 2, 4, 3)), mb.TensorSpec(shape=(2, 3, 2), dtype=types.int32)],
                opset_version=ct.target.iOS17)
    def prog(x, idx):
        return (mb.gather(x=x, indices=idx, axis=2, batch_dims=2, name="runtime"),
                mb.gather(x=x, indices=const_idx, axis=3, batch_dims=2, name="const"),
                mb.gather(x=mb.reshape(x=x, shape=[2, 6, 4, 3]), indices=mb.reshape(
                    x=mb.slice_by_size(x=idx, begin=[0, 0, 0], size=[2, 1, 2]), shape=[2, 2]), axis=2,
                    batch_dims=1, name="pre_axes"),
                mb.gather_nd(x=mb.reshape(x=x, shape=[2, 3, 8, 3]), indices=nd_idx, batch_dims=1, name="nd"))

    x = rng.standard_normal((2, 3, 2, 4, 3)).astype(np.float32)
    idx = rng.integers(-2, 2, size=(2, 3, 2)).astype(np.int32)
    got = run(save(prog, tmp_path), {"x": x, "idx": idx})
    close(got["runtime"], batched_take(x, idx, 2, 2), 0, 0)
    close(got["const"], batched_take(x, const_idx, 2, 3), 0, 0)
    close(got["pre_axes"], batched_take(x.reshape(2, 6, 4, 3), idx[:, 0], 1, 2), 0, 0)
    x4 = x.reshape(2, 3, 8, 3)
    close(got["nd"], np.stack([x4[n][tuple(nd_idx[n].T)] for n in range(2)]), 0, 0)


def test_topk_options(tmp_path):
    """iOS16+ topk: sort=False (any order: compared as sets), return_indices=False (values only),
    iOS17 output_indices_dtype uint16."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb

    @mb.program(input_specs=[mb.TensorSpec(shape=(3, 7))], opset_version=ct.target.iOS17)
    def prog(x):
        v, i = mb.topk(x=x, k=3, axis=1, sort=False, output_indices_dtype="uint16", name="unsorted")
        return v, mb.cast(x=i, dtype="int32", name="idx"), mb.topk(x=x, k=2, axis=0, ascending=True,
                                                                    return_indices=False, name="values_only")

    rng = np.random.default_rng(4)
    x = rng.permutation(21).reshape(3, 7).astype(np.float32)
    got = run(save(prog, tmp_path), {"x": x})
    order = np.argsort(-x, axis=1)[:, :3]
    values = [o for o in got if o.startswith("unsorted")][0]
    np.testing.assert_array_equal(np.sort(got[values], axis=1), np.sort(np.take_along_axis(x, order, 1), axis=1))
    np.testing.assert_array_equal(np.sort(got["idx"], axis=1), np.sort(order, axis=1))
    np.testing.assert_array_equal(np.take_along_axis(x, got["idx"].astype(np.int64), 1), got[values])
    close(got["values_only"], np.sort(x, axis=0)[:2], 0, 0)
