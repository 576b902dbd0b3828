"""Core ML flexible input shapes, for both NeuralNetwork and ML Program models
(docs/dynamic-shapes.md, docs/coreml.md and docs/mlprogram.md "Flexible shapes").

- A range (`shapeRange`, coremltools' `RangeDim`; an image's `imageSizeRange`) makes each axis
  whose range is more than one size a dynamic dimension: a symbol `<input>_<axis>` (the input's
  name made an identifier; an image's axes are those of [C, H, W]) with the range's bounds. An
  unbounded range (upper bound -1) is bounded at UNBOUNDED_MAX. The graph's Unifier merges
  symbols that must be equal (BERT's `input_ids` and `attention_mask` lengths).
- Enumerated shapes (`enumeratedShapes`, an image's `enumeratedSizes`) compile one specialised
  function per shape into one artefact (`variants`, `assemble`): the signature lists them under
  "enumerated_shapes" and `Model.run` picks the function whose shapes the inputs have. Several
  enumerated inputs with equally many shapes are combined by index (what coremltools writes for
  an iOS18 ML Program, and what inputs that vary together, such as token ids and their mask,
  need); with different counts every combination is compiled.
- `shapes=` (`--shape`) fixes an input to one static shape, which must lie in its range or set.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from estuary.base import dims
from estuary.base.dims import Dim
from estuary.base.errors import ModelImportError
from estuary.dialects.graph import NNModule, shape_json
from estuary.importers.webnn.dynamic import default_name

UNBOUNDED_MAX = 1 << 15  # the bound of an unbounded range: products of two such sizes stay below 2^31
MAX_VARIANTS = 128  # Core ML's limit on enumerated shapes
Shapes = Mapping[str, Sequence[int]]


def _kind(feature: Any) -> str:
    return str(feature.type.WhichOneof("Type"))


def ranges(feature: Any) -> list[tuple[int, int]] | None:
    """The (lower, upper) size per axis of a range-flexible input ([C, H, W] for an image; an
    upper bound of -1 is unbounded), or None."""
    if _kind(feature) == "multiArrayType":
        t = feature.type.multiArrayType
        if t.WhichOneof("ShapeFlexibility") != "shapeRange" or not len(t.shapeRange.sizeRanges):
            return None
        return [(int(r.lowerBound), int(r.upperBound)) for r in t.shapeRange.sizeRanges]
    if _kind(feature) == "imageType" and feature.type.imageType.WhichOneof("SizeFlexibility") == "imageSizeRange":
        r = feature.type.imageType.imageSizeRange
        return [(0, 0), (int(r.heightRange.lowerBound), int(r.heightRange.upperBound)),
                (int(r.widthRange.lowerBound), int(r.widthRange.upperBound))]
    return None


def dynamic_shape(feature: Any, fixed: Sequence[int], path: str) -> list[dims.Value] | None:
    """The shape of a range-flexible input with a symbol per flexible axis (`fixed` gives the
    axes the ranges leave alone, e.g. an image's channels); None for other inputs."""
    axes = ranges(feature)
    if axes is None:
        return None
    if len(axes) != len(fixed):
        raise ModelImportError(f"{path}: input {feature.name!r} has {len(axes)} shape ranges for its "
                               f"{len(fixed)} axes")
    shape: list[dims.Value] = []
    for axis, ((lo, hi), size) in enumerate(zip(axes, fixed)):
        if (lo, hi) == (0, 0) or lo == hi:  # an image's channels; a range of one size
            shape.append(lo or int(size))
            continue
        hi = UNBOUNDED_MAX if hi < 0 else hi
        if not 0 <= lo <= hi:
            raise ModelImportError(f"{path}: input {feature.name!r} axis {axis} has the range {lo}..{hi}")
        shape.append(Dim.symbol(default_name(feature.name, axis), max(lo, 1), min(hi, dims.MAX_BOUND)))
    return shape


def enumerated(feature: Any) -> list[list[int]]:
    """The enumerated shapes of an input ([C, H, W] for an image), or []."""
    if _kind(feature) == "multiArrayType":
        t = feature.type.multiArrayType
        if t.WhichOneof("ShapeFlexibility") == "enumeratedShapes":
            return [[int(d) for d in s.shape] for s in t.enumeratedShapes.shapes]
    elif _kind(feature) == "imageType":
        t = feature.type.imageType
        if t.WhichOneof("SizeFlexibility") == "enumeratedSizes":
            channels = 1 if t.colorSpace in (10, 40) else 3  # GRAYSCALE, GRAYSCALE_FLOAT16
            return [[channels, int(s.height), int(s.width)] for s in t.enumeratedSizes.sizes]
    return []


def default_shape(feature: Any) -> list[int] | None:
    """The shape coremltools records as the input's default ([C, H, W] for an image)."""
    if _kind(feature) == "multiArrayType":
        return [int(d) for d in feature.type.multiArrayType.shape] or None
    if _kind(feature) == "imageType":
        t = feature.type.imageType
        channels = 1 if t.colorSpace in (10, 40) else 3
        return [channels, int(t.height), int(t.width)] if t.height and t.width else None
    return None


def check_override(feature: Any, shapes: Shapes, path: str) -> None:
    """A shapes= override must lie in the input's declared range or enumerated set."""
    if feature.name not in shapes or _kind(feature) != "multiArrayType":
        return
    t = feature.type.multiArrayType
    shape = [int(d) for d in shapes[feature.name]]
    allowed = enumerated(feature)
    bounds = ranges(feature)
    if allowed:
        if shape not in allowed:
            raise ModelImportError(f"{path}: shapes[{feature.name!r}] = {shape} is not one of the model's "
                                   f"enumerated shapes {allowed}")
    elif bounds is not None:
        ok = len(bounds) == len(shape) and all(lo <= d and (hi < 0 or d <= hi) for d, (lo, hi) in zip(shape, bounds))
        if not ok:
            raise ModelImportError(f"{path}: shapes[{feature.name!r}] = {shape} is outside the model's shape "
                                   f"ranges {bounds}")
    elif list(t.shape) and shape != [int(d) for d in t.shape]:
        raise ModelImportError(f"{path}: input {feature.name!r} has the fixed shape {list(t.shape)}; "
                               f"shapes= asks for {shape}")


def variants(features: Iterable[Any], shapes: Shapes, path: str) -> list[dict[str, list[int]]]:
    """The input shapes of each function to compile for the inputs with enumerated shapes (those
    `shapes` does not fix), the default shapes first; [] when there are none."""
    features = list(features)
    sets = {f.name: enumerated(f) for f in features if f.name not in shapes and len(enumerated(f)) > 1}
    if not sets:
        return []
    names = list(sets)
    if len({len(v) for v in sets.values()}) == 1:
        combos = [dict(zip(names, row)) for row in zip(*sets.values())]
    else:
        combos = [dict(zip(names, row)) for row in itertools.product(*sets.values())]
    if len(combos) > MAX_VARIANTS:
        raise ModelImportError(f"{path}: the enumerated shapes of {names} make {len(combos)} combinations, more "
                               f"than the {MAX_VARIANTS} Estuary compiles; fix some with --shape / shapes=")
    unique = list({variant_name("", c): c for c in combos}.values())
    defaults = {f.name: default_shape(f) for f in features if f.name in sets}
    unique.sort(key=lambda c: c != defaults)  # the description's default shapes (when listed) first
    return unique


def variant_name(function: str, shapes: Mapping[str, Sequence[int]]) -> str:
    """`main[x=1x7x3]`: the function compiled for these input shapes."""
    return f"{function}[{','.join(f'{n}=' + 'x'.join(map(str, s)) for n, s in shapes.items())}]"


def function_entry(inputs: Sequence[tuple[str, Any]], outputs: Sequence[tuple[str, Any]], boundary: Mapping[str, str],
                   unifier: dims.Unifier) -> dict[str, Any]:
    """The signature entry of one function: its inputs, outputs and (dynamic) dimensions."""
    tensors = lambda named: [[n, shape_json(s.shape), boundary.get(n, s.dtype)] for n, s in named]  # noqa: E731
    entry: dict[str, Any] = {"inputs": tensors(inputs), "outputs": tensors(outputs)}
    table = dims.symbols(d for _, s in list(inputs) + list(outputs) for d in s.shape)
    if table:
        entry["dims"] = {"symbols": {n: [s.lo, s.hi] for n, s in sorted(table.items())}, "rules": unifier.text()}
    return entry


def assemble(nn: NNModule, functions: dict[str, dict[str, Any]], default: str,
             enumerated_shapes: dict[str, dict[str, Any]]) -> NNModule:
    """`nn` (whose @main is function `default`) with the signature of all its functions:
    "functions" maps each name to its entry point and signature, "default_function" names @main's,
    "enumerated_shapes" maps each function compiled for enumerated shapes to the MIL function it
    specialises and its input shapes (Model.run chooses among them by the inputs' shapes)."""
    functions = {default: dict(nn.signature(), entry="main"), **functions}
    for entry in functions.values():
        for key in ("format", "source", "target", "metadata"):
            entry.pop(key, None)
    extra = dict(getattr(nn, "extra_signature", None) or {}, functions=functions, default_function=default)
    if enumerated_shapes:
        extra["enumerated_shapes"] = enumerated_shapes
    nn.extra_signature = extra
    nn.write_signature()
    return nn
