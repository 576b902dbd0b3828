"""iOS18 multifunction models (ct.utils.save_multifunction): every function compiles into one
artefact, `run(feed, function=)` and `estuary run --function` pick one, against torch on CPU; the
model's metadata, functions and states in `estuary info`."""
import json
import os

import numpy as np
import pytest

import estuary
from estuary.cli import main as cli_main
from tests.importers.mlprogram.util import accumulator_package, check_running_sum

torch = pytest.importorskip("torch")


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(6, 12), torch.nn.Linear(12, 3)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, image, scale):
        return torch.sigmoid(self.conv(image)) * scale


@pytest.fixture(scope="module")
def multifunction(tmp_path_factory):
    """A package with functions "classify" (default) and "features" from two torch modules, its
    metadata set as a user would; the modules and the package path."""
    import coremltools as ct

    folder = tmp_path_factory.mktemp("multifunction")
    torch.manual_seed(2)
    mlp, conv = Mlp().eval(), Conv().eval()
    parts = {"mlp": (mlp, [ct.TensorType(name="x", shape=(2, 6))], (torch.zeros(2, 6),)),
             "conv": (conv, [ct.TensorType(name="image", shape=(1, 3, 5, 5)), ct.TensorType(name="scale", shape=(1,))],
                      (torch.zeros(1, 3, 5, 5), torch.ones(1)))}
    for name, (module, inputs, example) in parts.items():
        ml = ct.convert(torch.jit.trace(module, example), inputs=inputs, convert_to="mlprogram",
                        minimum_deployment_target=ct.target.iOS18, compute_precision=ct.precision.FLOAT32)
        ml.save(str(folder / f"{name}.mlpackage"))
    desc = ct.utils.MultiFunctionDescriptor()
    desc.add_function(str(folder / "mlp.mlpackage"), src_function_name="main", target_function_name="classify")
    desc.add_function(str(folder / "conv.mlpackage"), src_function_name="main", target_function_name="features")
    desc.default_function_name = "classify"
    joined = str(folder / "joined.mlpackage")
    ct.utils.save_multifunction(desc, joined)
    ml = ct.models.MLModel(joined, skip_model_load=True)
    ml.author, ml.short_description, ml.version = "Estuary tests", "two functions", "1.2"
    ml.user_defined_metadata["purpose"] = "multifunction test"
    path = str(folder / "model.mlpackage")
    ml.save(path)
    return mlp, conv, path


def test_functions_in_one_artefact(multifunction):
    mlp, conv, path = multifunction
    art = estuary.compile(path)
    model = estuary.load(art)
    assert model.functions == ["classify", "features"] and model.default_function == "classify"
    assert [n for n, _, _ in model.inputs] == ["x"]  # the default function's
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6)).astype(np.float32)
    image, scale = rng.standard_normal((1, 3, 5, 5)).astype(np.float32), np.array([1.5], np.float32)
    with torch.no_grad():
        want_mlp = mlp(torch.from_numpy(x)).numpy()
        want_conv = conv(torch.from_numpy(image), torch.from_numpy(scale)).numpy()
    (got,) = model.run({"x": x}).values()
    np.testing.assert_allclose(got, want_mlp, rtol=1e-5, atol=1e-5)
    (got,) = model.run({"x": x}, function="classify").values()
    np.testing.assert_allclose(got, want_mlp, rtol=1e-5, atol=1e-5)
    (got,) = model.run({"image": image, "scale": scale}, function="features").values()
    np.testing.assert_allclose(got, want_conv, rtol=1e-5, atol=1e-5)
    features = model.function("features")
    assert [n for n, _, _ in features.inputs] == ["image", "scale"] and features.outputs[0][1] == (1, 4, 5, 5)
    assert features.function_name == "features" and features.function("classify") is model
    with pytest.raises(estuary.RuntimeInputError, match="function 'features' has no states"):
        model.make_state("features")
    with pytest.raises(estuary.RuntimeInputError, match="no function 'nope'.*classify, features"):
        model.run({"x": x}, function="nope")
    with pytest.raises(estuary.RuntimeInputError, match="missing"):
        model.run({"x": x}, function="features")
    # one function alone still imports as before
    from estuary.importers.mlprogram import load_model

    nn = load_model(path, function="features")
    assert [n for n, _ in nn.inputs] == ["image", "scale"] and "functions" not in nn.signature()
    nn.close()


def test_cli_function_and_info(multifunction, tmp_path, capsys):
    mlp, conv, path = multifunction
    vmfb = str(tmp_path / "model.vmfb")
    assert cli_main(["compile", path, "-o", vmfb, "-q"]) == 0
    image = np.random.default_rng(1).standard_normal((1, 3, 5, 5)).astype(np.float32)
    np.save(tmp_path / "image.npy", image)
    np.save(tmp_path / "scale.npy", np.array([2.0], np.float32))
    out = tmp_path / "out"
    assert cli_main(["run", vmfb, "--function", "features", "--input", f"image={tmp_path / 'image.npy'}",
                     "--input", f"scale={tmp_path / 'scale.npy'}", "--output-dir", str(out), "-q"]) == 0
    (name,) = os.listdir(out)
    with torch.no_grad():
        want = conv(torch.from_numpy(image), torch.tensor([2.0])).numpy()
    np.testing.assert_allclose(np.load(out / name), want, rtol=1e-5, atol=1e-5)
    assert cli_main(["run", vmfb, "--function", "nope", "--random-inputs"]) != 0
    capsys.readouterr()
    assert cli_main(["bench", vmfb, "--function", "features", "--iterations", "2", "--warmup", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["random_inputs"] == ["image", "scale"]
    assert cli_main(["info", vmfb]) == 0
    text = capsys.readouterr().out
    for line in ("author: Estuary tests", "short description: two functions", "version: 1.2",
                 "metadata purpose: multifunction test", "function classify (default)", "function features",
                 "  input  x: float32[2, 6]", "  input  image: float32[1, 3, 5, 5]", "  input  scale: float32[1]"):
        assert line in text, (line, text)
    assert estuary.load(vmfb).metadata["user_defined"]["purpose"] == "multifunction test"


def test_info_lists_states(tmp_path, capsys):
    """A stateful model's states are listed once, as states, in the package and in its .vmfb."""
    path = accumulator_package(tmp_path)
    vmfb = str(tmp_path / "acc.vmfb")
    assert cli_main(["compile", path, "-o", vmfb, "-q"]) == 0
    for source in (path, vmfb):
        capsys.readouterr()
        assert cli_main(["info", source]) == 0
        text = capsys.readouterr().out
        assert "state  acc: float16[2, 3]" in text and "input  acc" not in text and "output acc" not in text
    # a running sum kept on the device: x, then 2x, then 3x
    model = estuary.load(vmfb)
    check_running_sum(model)


def test_state_shared_between_functions(tmp_path):
    """Functions declaring the same states may share one State (as a prefill and a decode
    function share a KV cache): "accumulate" adds x to it, "scale" multiplies it by s."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    def program(step):
        @mb.program(input_specs=[mb.TensorSpec(shape=(3,)), mb.StateTensorSpec(shape=(3,), dtype=types.fp16)],
                    opset_version=ct.target.iOS18)
        def prog(x, acc):
            new = step(mb.cast(x=mb.read_state(input=acc), dtype="fp32"), x)
            mb.coreml_update_state(state=acc, value=mb.cast(x=new, dtype="fp16"))
            return mb.identity(x=new, name="value")
        return prog

    desc = ct.utils.MultiFunctionDescriptor()
    for name, step in (("accumulate", lambda a, x: mb.add(x=a, y=x)), ("scale", lambda a, x: mb.mul(x=a, y=x))):
        ml = ct.convert(program(step), convert_to="mlprogram", minimum_deployment_target=ct.target.iOS18,
                        compute_precision=ct.precision.FLOAT32)
        ml.save(str(tmp_path / f"{name}.mlpackage"))
        desc.add_function(str(tmp_path / f"{name}.mlpackage"), src_function_name="main", target_function_name=name)
    desc.default_function_name = "accumulate"
    path = str(tmp_path / "both.mlpackage")
    ct.utils.save_multifunction(desc, path)
    model = estuary.load(estuary.compile(path))
    state = model.make_state()
    x = np.array([1, 2, 3], np.float32)
    model.run({"x": x}, state=state)
    model.run({"x": np.full(3, 2, np.float32)}, state=state, function="scale")
    np.testing.assert_array_equal(model.run({"x": x}, state=state)["value"], 3 * x)
    np.testing.assert_array_equal(state.read("acc"), (3 * x).astype(np.float16))
    other = model.make_state("scale")  # a second, independent state: still zeros
    np.testing.assert_array_equal(model.run({"x": x}, state=other, function="scale")["value"], 0 * x)


@pytest.mark.parametrize("extra, message", [
    ({"states": [["k", [2, -1], "float16"]]}, "state 0 'k': shape"),
    ({"functions": {"f": {"inputs": [], "outputs": []}}}, "function 'f' has no entry point"),
    ({"functions": {"f": {"entry": "fn1", "inputs": [["x", [2], "float99"]], "outputs": []}}}, "unknown dtype"),
    ({"metadata": {"author": 3}}, "metadata is not an object of strings"),
])
def test_signature_schema(extra, message):
    """The artefact's signature is checked before the runtime relies on its states, functions
    and metadata (a damaged or forged .vmfb gives a clear error)."""
    from estuary.base.integrity import IntegrityError, check_signature

    with pytest.raises(IntegrityError, match=message):
        check_signature({"inputs": [], "outputs": [], **extra})


def test_classifier_function(tmp_path):
    """A classifier that is not the default function still maps its class index to the label."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb

    torch.manual_seed(0)
    head = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.Softmax(-1)).eval()
    ml = ct.convert(torch.jit.trace(head, torch.zeros(1, 6)), inputs=[ct.TensorType(name="x", shape=(1, 6))],
                    convert_to="mlprogram", minimum_deployment_target=ct.target.iOS18,
                    compute_precision=ct.precision.FLOAT32, classifier_config=ct.ClassifierConfig(["cat", "dog", "eel"]))
    ml.save(str(tmp_path / "cls.mlpackage"))

    @mb.program(input_specs=[mb.TensorSpec(shape=(4,))], opset_version=ct.target.iOS18)
    def relu(a):
        return mb.relu(x=a, name="r")

    ct.convert(relu, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS18).save(
        str(tmp_path / "relu.mlpackage"))
    desc = ct.utils.MultiFunctionDescriptor()
    desc.add_function(str(tmp_path / "cls.mlpackage"), src_function_name="main", target_function_name="cls")
    desc.add_function(str(tmp_path / "relu.mlpackage"), src_function_name="main", target_function_name="relu")
    desc.default_function_name = "relu"
    ct.utils.save_multifunction(desc, str(tmp_path / "both.mlpackage"))
    model = estuary.load(estuary.compile(str(tmp_path / "both.mlpackage")))
    x = np.random.default_rng(0).standard_normal((1, 6)).astype(np.float32)
    with torch.no_grad():
        probs = head(torch.from_numpy(x)).numpy()[0]
    out = model.run({"x": x}, function="cls")
    np.testing.assert_allclose(out["classLabel_probs"], probs, rtol=1e-5, atol=1e-6)
    assert list(out["classLabel"]) == [["cat", "dog", "eel"][int(np.argmax(probs))]]
