"""Helpers for the ML Program tests: build programs with coremltools' MIL builder, save them as
.mlpackage with ct.convert, compile and run them with Estuary, compare with float64 numpy."""
import os

import numpy as np

import estuary


def ct():
    import coremltools

    return coremltools


def save(prog, folder, name="model", precision="fp32", target=None):
    """ct.convert a MIL program (or traced torch module with inputs=) to an .mlpackage in folder."""
    c = ct()
    path = os.path.join(str(folder), f"{name}.mlpackage")
    model = c.convert(prog, convert_to="mlprogram",
                      compute_precision=c.precision.FLOAT32 if precision == "fp32" else c.precision.FLOAT16,
                      minimum_deployment_target=target or c.target.iOS17)
    model.save(path)
    return path


def run(source, feeds, **kw):
    art = estuary.compile(source, **kw)
    return estuary.load(art).run(feeds)


def close(got, want, rtol=1e-5, atol=1e-6):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


def accumulator_package(tmp_path):
    """A running sum in an fp16 state: total = acc + x; acc = total."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3)), mb.StateTensorSpec(shape=(2, 3), dtype=types.fp16)],
                opset_version=ct.target.iOS18)
    def prog(x, acc):
        total = mb.add(x=mb.cast(x=mb.read_state(input=acc), dtype="fp32"), y=x)
        mb.coreml_update_state(state=acc, value=mb.cast(x=total, dtype="fp16"))
        return mb.identity(x=total, name="total")

    ml = ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS18,
                    compute_precision=ct.precision.FLOAT32)
    path = str(tmp_path / "acc.mlpackage")
    ml.save(path)
    return path


def check_running_sum(model):
    """Three runs of `accumulator_package`'s model with one State: x, then 2x, then 3x, and the
    state holds 3x in float16."""
    state = model.make_state()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for k in (1, 2, 3):
        np.testing.assert_array_equal(model.run({"x": x}, state=state)["total"], k * x)
    np.testing.assert_array_equal(state.read("acc"), (3 * x).astype(np.float16))
