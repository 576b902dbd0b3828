"""Core ML ND shape layers (range, fill, getShape, broadcast, reshape family, squeeze/expandDims,
transpose, concatND, splitND, slices, constantPad, loadConstantND, embeddingND) vs numpy
indexing/arithmetic written from the spec; several layers share one compiled model."""
import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml.util import run, save  # noqa: E402
from estuary.base.errors import VerificationError  # noqa: E402
from helpers import assert_exact, assert_ulp  # noqa: E402


def builder(inputs, outputs):
    return NeuralNetworkBuilder([(n, datatypes.Array(*s)) for n, s in inputs], [(n, None) for n in outputs],
                                disable_rank5_shape_mapping=True)


def check(got, want):
    for name, ref in want.items():
        assert got[name].shape == np.shape(ref), (name, got[name].shape, np.shape(ref))
        assert_exact(got[name], np.asarray(ref, dtype=np.float32))


def test_constant_layers(tmp_path, rng):
    """range, getShape, fill*, loadConstantND, and the 'dynamic' layers fed by constants."""
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    shp = np.array([3, 2], np.float32)
    want = {"r1": np.arange(1.0, 7.0, 1.5), "r2": np.arange(5.0, -1.0, -2.0), "rd": np.arange(2.0, 10.0, 3.0),
            "shape": [2, 3, 4], "fl": np.full((2, 3, 4), 2.5), "fs": np.full((2, 2), -1.0),
            "fd": np.full((3, 2), 7.0), "lc": shp, "rs": x.reshape(3, 2, 4),
            "bd": np.broadcast_to(shp, (2, 3, 2)), "sum": x + 2.5, "rsf": x.reshape(4, 3, 2)}
    b = builder([("x", x.shape)], list(want))
    b.add_range_static("r1", "r1", end=7.0, start=1.0, step=1.5)
    b.add_range_static("r2", "r2", end=-1.0, start=5.0, step=-2.0)
    b.add_load_constant_nd("end", "end", constant_value=np.array([10.0]), shape=[1])
    b.add_load_constant_nd("start", "start", constant_value=np.array([2.0]), shape=[1])
    b.add_range_dynamic("rd", ["end", "start"], "rd", start=0, step=3.0)
    b.add_get_shape("shape", "x", "shape")
    b.add_fill_like("fl", "x", "fl", value=2.5)
    b.add_fill_static("fs", "fs", output_shape=[2, 2], value=-1.0)
    b.add_load_constant_nd("lc", "lc", constant_value=shp, shape=[2])
    b.add_fill_dynamic("fd", "lc", "fd", value=7.0)
    b.add_load_constant_nd("target", "target", constant_value=np.array([3.0, 2.0, 4.0]), shape=[3])
    b.add_reshape_dynamic("rs", ["x", "target"], "rs")
    b.add_load_constant_nd("bshape", "bshape", constant_value=np.array([2.0, 3.0, 2.0]), shape=[3])
    b.add_broadcast_to_dynamic("bd", ["lc", "bshape"], "bd")
    b.add_add_broadcastable("sum", ["x", "fl"], "sum")
    # a shape computed from constants is folded: getShape -> reversed by sliceStatic -> reshapeDynamic
    b.add_slice_static("rev", "shape", "rev", begin_ids=[0], end_ids=[0], strides=[-1], begin_masks=[True],
                       end_masks=[True])
    b.add_reshape_dynamic("rsf", ["x", "rev"], "rsf")
    check(run(save(b, tmp_path), {"x": x}), want)


def test_reshape_and_layout_layers(tmp_path, rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    y = rng.standard_normal((3, 1)).astype(np.float32)
    like = rng.standard_normal((4, 6)).astype(np.float32)
    want = {"rst": x.reshape(6, -1), "rlike": x.reshape(4, 6), "rpr": x.reshape(2, 4, 3), "f2d": x.reshape(2, 12),
            "f2d0": x.reshape(1, 24), "sq": x.reshape(1, 2, 3, 4, 1).squeeze((0, 4)), "ex": x.reshape(2, 1, 3, 4, 1),
            "sqall": y.reshape(1, 3, 1).squeeze(), "tr": x.transpose(2, 0, 1),
            "btl": np.broadcast_to(y, (2, 3, 4)), "bts": np.broadcast_to(y, (2, 3, 5)),
            "cat": np.concatenate([x, x * 2], axis=-2), "il": np.stack([x, x * 2], axis=3).reshape(2, 3, 8),
            "s0": x[:, :1], "s1": x[:, 1:], "e0": x[..., :2], "e1": x[..., 2:]}
    b = builder([("x", x.shape), ("y", y.shape), ("like", like.shape)], list(want))
    b.add_reshape_static("rst", "x", "rst", output_shape=[6, -1])
    b.add_reshape_like("rlike", ["x", "like"], "rlike")
    b.add_rank_preserving_reshape("rpr", "x", "rpr", output_shape=[0, 4, -1])
    b.add_flatten_to_2d("f2d", "x", "f2d", axis=1)
    b.add_flatten_to_2d("f2d0", "x", "f2d0", axis=-3)
    b.add_expand_dims("ex", "x", "ex", axes=[1, -1])
    b.add_squeeze("sq", "ex", "sq", axes=[1, -1])
    b.add_expand_dims("y3", "y", "y3", axes=[0])
    b.add_squeeze("sqall", "y3", "sqall", squeeze_all=True)
    b.add_transpose("tr", [2, 0, -2], "x", "tr")
    b.add_broadcast_to_like("btl", ["y", "x"], "btl")
    b.add_broadcast_to_static("bts", "y", "bts", output_shape=[2, 3, 5])
    b.add_load_constant_nd("two", "two", constant_value=np.array([2.0]), shape=[1])
    b.add_multiply_broadcastable("x2", ["x", "two"], "x2")
    b.add_concat_nd("cat", ["x", "x2"], "cat", axis=-2)
    b.add_concat_nd("il", ["x", "x2"], "il", axis=2, interleave=True)
    b.add_split_nd("split", "x", ["s0", "s1"], axis=1, split_sizes=[1, 2])
    b.add_split_nd("even", "x", ["e0", "e1"], axis=-1, num_splits=2)
    check(run(save(b, tmp_path), {"x": x, "y": y, "like": like}), want)


def test_slice_pad_embedding_layers(tmp_path, rng):
    x = rng.standard_normal((5, 5, 5)).astype(np.float32)
    idx = np.array([[[2], [0]], [[4], [4]], [[1], [3]]], np.float32)  # (3, 2, 1)
    w = rng.standard_normal((6, 5)).astype(np.float32)  # (embeddingSize, vocabSize)
    bias = rng.standard_normal((6,)).astype(np.float32)
    want = {"ss": x[:3:2, 2::2, ::2], "ssq": x[:3:2, 2, ::2], "sneg": x[::-2, -4:-1, 4:0:-3],
            "sd": x[1:4, ::2, -1:], "sbs": x[:, :, 1:4], "pad": np.pad(x[0], [(0, 1), (4, 0)], constant_values=1.5),
            "padto": np.pad(x[0], [(0, 2), (3, 0)], constant_values=-2.0), "emb": w.T[idx[..., 0].astype(int)] + bias}
    b = builder([("x", x.shape), ("idx", idx.shape)], list(want))
    b.add_slice_static("ss", "x", "ss", begin_ids=[1, 2, 3], end_ids=[3, -3, 2], strides=[2, 2, 2],
                       begin_masks=[True, False, True], end_masks=[False, True, True])
    b.add_slice_static("ssq", "x", "ssq", begin_ids=[1, 2, 3], end_ids=[3, -3, 2], strides=[2, 2, 2],
                       begin_masks=[True, False, True], end_masks=[False, True, True],
                       squeeze_masks=[False, True, False])
    b.add_slice_static("sneg", "x", "sneg", begin_ids=[0, -4, 4], end_ids=[0, -1, 0], strides=[-2, 1, -3],
                       begin_masks=[True, False, False], end_masks=[True, False, False])
    b.add_load_constant_nd("begin", "begin", constant_value=np.array([1.0, 0.0, -1.0]), shape=[3])
    b.add_load_constant_nd("end", "end", constant_value=np.array([4.0, 5.0, 5.0]), shape=[3])
    b.add_slice_dynamic("sd", ["x", "begin", "end"], "sd", strides=[1, 2, 1], begin_masks=[False] * 3,
                        end_masks=[False, False, True])
    b.add_load_constant_nd("one", "one", constant_value=np.array([1.0]), shape=[1])
    b.add_slice_by_size("sbs", ["x", "one"], "sbs", axis=-1, size=3)
    b.add_slice_static("x0", "x", "x0", begin_ids=[0, 0, 0], end_ids=[1, 5, 5], strides=[1, 1, 1],
                       begin_masks=[False] * 3, end_masks=[False] * 3, squeeze_masks=[True, False, False])
    b.add_constant_pad("pad", ["x0"], "pad", value=1.5, pad_amounts=[0, 1, 4, 0])
    b.add_constant_pad("padto", ["x0"], "padto", value=-2.0, pad_to_given_output_size_mode=True,
                       pad_amounts=[0, 7, 8, 0])
    b.add_embedding_nd("emb", "idx", "emb", vocab_size=5, embedding_size=6, W=w, b=bias)
    got = run(save(b, tmp_path), {"x": x, "idx": idx})
    emb = want.pop("emb")
    check(got, want)
    assert_ulp(got["emb"], emb, 0)


def _range_of_input(b):
    b.add_range_dynamic("bad", ["n"], "y")


def _squeeze_non_unit(b):
    b.add_squeeze("bad", "x", "y", axes=[1])


def _slice_empty(b):
    b.add_slice_static("bad", "x", "y", begin_ids=[1, 2], end_ids=[1, 3], strides=[1, 1], begin_masks=[False] * 2,
                       end_masks=[False] * 2)


@pytest.mark.parametrize("add, message", [
    (_range_of_input, r"operation 'bad'.*endValue.*must be a compile-time constant"),
    (_squeeze_non_unit, r"operation 'bad'.*cannot squeeze axes \[1\] of shape \[2, 3\]"),
    (_slice_empty, r"operation 'bad'.*the slice of axis 0 is empty"),
])
def test_clear_errors(tmp_path, add, message):
    """Unsupported or invalid layers fail at import with the model file, layer name and message."""
    b = builder([("x", (2, 3)), ("n", (1,))], ["y"])
    add(b)
    with pytest.raises(VerificationError, match=message):
        run(save(b, tmp_path), {"x": np.zeros((2, 3), np.float32), "n": np.ones(1, np.float32)})


@pytest.mark.parametrize("begin", [0.0, 2.0, -3.0, -5.0])
def test_slice_by_size_with_a_run_time_begin(tmp_path, rng, begin):
    """sliceBySize whose begin is a model input: the output shape (size) is static, so the window's
    offset is computed at run time (it was refused as data-dependent); negative begin counts from
    the end."""
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    b = builder([("x", x.shape), ("begin", (1,))], ["y", "z"])
    b.add_slice_by_size("y", ["x", "begin"], "y", axis=1, size=2)
    b.add_slice_by_size("z", ["x", "begin"], "z", axis=-2, size=3)
    got = run(save(b, tmp_path), {"x": x, "begin": np.array([begin], np.float32)})
    start = int(begin) + 5 if begin < 0 else int(begin)
    check(got, {"y": x[:, start:start + 2], "z": x[:, start:start + 3]})
