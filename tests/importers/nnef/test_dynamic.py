"""tract's symbolic dimensions (docs/dynamic-shapes.md, docs/nnef.md "Symbols"): `extension
tract_symbol S;` makes S a dynamic dimension; the shape arithmetic tract writes (`S * 2`, `S + 1`,
tract_core_shape_of, tract_core_range up to a length, reshape targets made of dimensions) folds
into dimension expressions; one artefact runs at every length. Oracles: tract (PyPI bindings) for
the hand-written document, torch for the torch-to-nnef Llama exports (prefill with a symbolic
length S, and a key/value cache with a symbolic past length P)."""
import numpy as np
import pytest

import estuary
from estuary.base.errors import ModelImportError, RuntimeInputError
from estuary.importers import import_model
from estuary.importers.nnef.tract_reader import DEFAULT_BOUND
from tests.importers.nnef.util import write_model

from .exporters import export, relative_error, torch_outputs, tract_outputs
from .test_torch_to_nnef import Prefill, tiny_llama

SHAPES = """version 1.0;
extension tract_registry tract_core;
extension tract_symbol S;

graph network(x) -> (y, z, w)
{
    x = tract_core_external(shape = [1, S, 4], datum_type = 'f32');
    s = tract_core_shape_of(x);
    n = squeeze(slice(s, axes = [0], begin = [1], end = [2], stride = [1]), axes = [0]);
    pos = tract_core_cast(tract_core_range(0, n, 1), to = 'f32');
    y = add(reshape(x, shape = [n, 4]), unsqueeze(pos, axes = [1]));
    z = reshape(concat([x, x], axis = 1), shape = [1, S * 2, 2, 2]);
    first = slice(x, axes = [1], begin = [0], end = [1], stride = [1]);
    w = reshape(concat([x, first], axis = 1), shape = [S + 1, 4]);
}
"""


def types(nn):
    return {n: str(s) for n, s in nn.inputs + nn.outputs}


@pytest.fixture(scope="module")
def shapes_doc(tmp_path_factory):
    return write_model(tmp_path_factory.mktemp("dyn"), SHAPES)


def test_symbols_become_dynamic_dimensions(shapes_doc):
    nn = import_model(shapes_doc)
    try:
        assert types(nn) == {"x": "float32[1, S, 4]", "y": "float32[S, 4]", "z": "float32[1, 2*S, 2, 2]",
                             "w": "float32[S + 1, 4]"}
        assert nn.signature()["dims"]["symbols"] == {"S": [1, DEFAULT_BOUND]}
    finally:
        nn.close()


def test_one_artefact_runs_every_length_as_tract_does(shapes_doc):
    model = estuary.load(estuary.compile(shapes_doc))
    for n in (1, 3, 8):
        x = np.random.default_rng(n).standard_normal((1, n, 4)).astype(np.float32)
        got = model.run({"x": x})
        for name, want in zip(("y", "z", "w"), tract_outputs(shapes_doc, [x])):
            np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)


def test_shapes_fix_or_bound_a_symbol(shapes_doc):
    nn = import_model(shapes_doc, shapes={"x": [1, 5, 4]})
    try:
        assert types(nn)["w"] == "float32[6, 4]"
    finally:
        nn.close()
    nn = import_model(shapes_doc, shapes={"x": [1, (2, 16), 4]})
    try:
        assert nn.signature()["dims"]["symbols"] == {"S": [2, 16]}
    finally:
        nn.close()
    model = estuary.load(estuary.compile(shapes_doc, shapes={"x": [1, "2..16", 4]}))
    assert model.dims == {"S": (2, 16)}
    model.run({"x": np.zeros((1, 16, 4), np.float32)})
    with pytest.raises(RuntimeInputError, match="S"):
        model.run({"x": np.zeros((1, 17, 4), np.float32)})


@pytest.mark.parametrize("text, shapes, message", [
    (SHAPES.replace("extension tract_symbol S;\n", ""), None, r"'S' is neither a tensor .* nor a symbol"),
    (SHAPES.replace("tract_symbol S;", "tract_symbol S;\nextension tract_symbol S;"), None, "declared twice"),
    (SHAPES.replace("tract_symbol S;", "tract_symbol;"), None, "names one symbol"),
    (SHAPES, {"x": [1, 5, (1, 4)]}, r"dimension 2 of 'x' is 4, not a symbol"),
    (SHAPES, {"x": [1, (4, 2), 4]}, "bounds 4..2"),
    (SHAPES, {"x": [1, 5]}, "must have 3 items"),
])
def test_bad_symbol_uses_are_refused(tmp_path, text, shapes, message):
    with pytest.raises(ModelImportError, match=message):
        import_model(write_model(tmp_path, text), shapes=shapes)


# ---------------------------------------------------------------- torch-to-nnef language models


def test_llama_prefill_with_a_symbolic_length(tmp_path):
    torch = pytest.importorskip("torch")
    model = Prefill(tiny_llama())
    ids = torch.randint(0, 97, (1, 5), generator=torch.Generator().manual_seed(0))
    path = export(model, (ids,), tmp_path, "tract", ["input_ids"], ["logits"], dynamic_axes={"input_ids": {1: "S"}})
    assert "extension tract_symbol S;" in open(f"{path}/graph.nnef").read()
    compiled = estuary.load(estuary.compile(path))
    assert compiled.dims == {"S": (1, DEFAULT_BOUND)}
    for n in (1, 4, 11):
        ids = torch.randint(0, 97, (1, n), generator=torch.Generator().manual_seed(n))
        got = compiled.run({"input_ids": ids.numpy().astype(np.int32)})["logits"]
        assert relative_error(got, torch_outputs(model, (ids,))[0]) < 1e-4


class Decode:
    """Build the key/value-cache step lazily (transformers loads through exporters.transformers)."""

    @staticmethod
    def module(llama):
        import torch

        from .exporters import transformers

        tf = transformers()

        class Step(torch.nn.Module):
            """(ids [1, S], past k/v [1, 2, P, 8] per layer) -> (logits [1, S, V], present k/v
            [1, 2, P + S, 8]): positions P .. P + S - 1 and a causal mask over the P + S keys."""

            def __init__(self, model):
                super().__init__()
                self.model = model

            def forward(self, ids, *past):
                s, p = ids.shape[1], past[0].shape[2]
                pos = torch.arange(p, p + s).unsqueeze(0)
                future = (torch.arange(p + s).reshape(1, p + s) > pos.reshape(s, 1)).to(torch.float32)
                mask = (future * torch.finfo(torch.float32).min)[None, None]
                cache = tf.DynamicCache()
                cache.layers = []
                for i in range(0, len(past), 2):  # filled layers: no concat with an empty tensor
                    layer = tf.DynamicLayer()
                    layer.lazy_initialization(past[i], past[i + 1])
                    layer.keys, layer.values = past[i], past[i + 1]
                    cache.layers.append(layer)
                out = self.model(input_ids=ids, past_key_values=cache, attention_mask=mask, position_ids=pos,
                                 use_cache=True)
                present = [t for layer in out.past_key_values.layers for t in (layer.keys, layer.values)]
                return (out.logits, *present)

        return Step(llama).eval()


def test_llama_kv_cache_with_symbolic_lengths(tmp_path):
    """torch-to-nnef's export of a decode step with dynamic_axes S (new tokens) and P (past):
    one artefact, logits and the grown caches equal to torch's at several (S, P)."""
    torch = pytest.importorskip("torch")
    model = Decode.module(tiny_llama())
    names = ["input_ids"] + [f"past_{kv}{i}" for i in range(2) for kv in "kv"]
    outputs = ["logits"] + [f"present_{kv}{i}" for i in range(2) for kv in "kv"]
    gen = torch.Generator().manual_seed(0)
    example = (torch.randint(0, 97, (1, 3), generator=gen), *(torch.randn(1, 2, 5, 8, generator=gen) for _ in range(4)))
    dynamic = {"input_ids": {1: "S"}, **{n: {2: "P"} for n in names[1:]}}
    path = export(model, example, tmp_path, "tract", names, outputs, dynamic_axes=dynamic)
    nn = import_model(path)
    try:
        assert types(nn)["present_k0"] == "float32[1, 2, P + S, 8]"
    finally:
        nn.close()
    compiled = estuary.load(estuary.compile(path))
    for s, p in ((1, 1), (1, 9), (4, 3)):
        gen = torch.Generator().manual_seed(10 * s + p)
        args = (torch.randint(0, 97, (1, s), generator=gen), *(torch.randn(1, 2, p, 8, generator=gen) for _ in range(4)))
        got = compiled.run({n: (a.numpy().astype(np.int32) if n == "input_ids" else a.numpy())
                            for n, a in zip(names, args)})
        for name, want in zip(outputs, torch_outputs(model, args)):
            assert got[name].shape == want.shape
            assert relative_error(got[name], want) < 1e-4, name
