"""The Core ML conversion context `Converter` (`c` in the layer converters of importers/coreml/ops/).

It walks a NeuralNetwork's layers in order, keeping a blob name -> nn Value table, and offers the
helpers the converters build with. A converter is `fn(c, layer)`, registered by the
NeuralNetworkLayer oneof field name(s) it handles (`@OPS.op("convolution")`); `layer` is the
protobuf message (its parameters: `params(layer)`), and it returns the nn Value(s) of
`layer.output` in order (a single Value when there is one output).
Layouts and model-kind decisions: importers/coreml/model_kinds.py and docs/coreml.md.
"""
from estuary.base import dims
from estuary.dialects.graph import Graph
from estuary.base.errors import ModelImportError, UnsupportedOpError, VerificationError
from estuary.importers.context import ConversionContext
from estuary.importers.coreml import flexible, model_kinds, weights
from estuary.importers.coreml.ops import OPS

EXACT_ARRAY_MAPPING = 1
RANK4_IMAGE_MAPPING = 1


def layer_kind(layer):
    return layer.WhichOneof("layer")


def params(layer):
    """The layer's parameter message (the set oneof field)."""
    return getattr(layer, layer.WhichOneof("layer"))


def walk_layers(layers):
    """Every layer, including those of nested networks (branch / loop bodies), depth first."""
    for layer in layers:
        yield layer
        kind = layer_kind(layer)
        if kind is None:
            continue
        p = params(layer)
        for field in p.DESCRIPTOR.fields:
            if field.message_type is not None and field.message_type.name == "NeuralNetwork" \
                    and p.HasField(field.name):
                yield from walk_layers(getattr(p, field.name).layers)


def unsupported_layers(layers):
    """[(layer name, kind, reason)] of the layers no converter handles."""
    out = []
    for layer in walk_layers(layers):
        kind = layer_kind(layer)
        if kind is None:
            out.append((layer.name, "<no layer type>", "the layer sets no layer type (newer spec or corrupt file?)"))
        elif kind == "custom":
            out.append((layer.name, "custom", f"custom layer class {layer.custom.className!r} has no "
                                              f"implementation outside the app that ships it"))
        elif kind not in OPS:
            out.append((layer.name, kind, "not supported"))
    return out


class Converter(ConversionContext):
    """Builds the nn module of one Core ML neural network model."""

    def __init__(self, model, path, shapes=None, graph=None):
        super().__init__(graph or Graph(path, "coreml"), path)
        self.model = model
        self.shapes = shapes or {}
        self.spec_version = int(model.specificationVersion)
        self.kind, self.network = model_kinds.network(model)
        self.nd = self.network.arrayInputShapeMapping == EXACT_ARRAY_MAPPING
        self.rank4_images = self.network.imageInputShapeMapping == RANK4_IMAGE_MAPPING
        self.blobs = {}
        self.layer = None
        self.extra_signature = {}

    # ------------------------------------------------------------ diagnostics

    def error_prefix(self):
        return f"{self.path}: layer {self.label!r} ({self.op_type})"

    def located(self, err):
        if self.layer is None:
            return err
        return VerificationError(f"{err} (while converting Core ML layer {self.label!r} ({self.op_type}))")

    # ------------------------------------------------------------ helpers for converters

    def blob(self, name):
        if name not in self.blobs:
            self.fail(f"blob {name!r} is used before any layer or input defines it")
        return self.blobs[name]

    def set_blob(self, name, value):
        self.blobs[name] = value

    def input(self, layer, k=0):
        self.check(k < len(layer.input), f"expects at least {k + 1} input(s), has {len(layer.input)}")
        return self.blob(layer.input[k])

    def inputs(self, layer):
        return [self.blob(n) for n in layer.input]

    def weights(self, weight_params, shape, what="weights", axis=0):
        """float32 array of WeightParams with `shape`, dequantized (per-channel along `axis`)."""
        return weights.dequantize(weight_params, shape, self.fail, what, axis)

    # ------------------------------------------------------------ conversion

    def convert_layers(self, layers):
        """Convert layers in order in the current blob scope."""
        outer = self.layer, self.label, self.op_type
        try:
            for layer in layers:
                self.layer = layer
                kind = layer_kind(layer)
                if kind not in OPS:
                    raise UnsupportedOpError(self.path, unsupported_layers([layer]))
                result = self.convert(layer.name, kind, OPS[kind].fn, layer)
                results = list(result) if isinstance(result, (list, tuple)) else [result]
                self.check(len(results) == len(layer.output),
                           f"the converter produced {len(results)} value(s) for {len(layer.output)} output(s)")
                for name, value in zip(layer.output, results):
                    self.set_blob(name, value)
        finally:
            self.layer, self.label, self.op_type = outer

    def declare_inputs(self):
        descr = self.model.description
        unknown = sorted(set(self.shapes) - {f.name for f in descr.input})
        if unknown:
            raise ModelImportError(f"{self.path}: shapes= names unknown inputs {unknown}")
        for f in descr.input:
            kind, spec, color = model_kinds.input_spec(f, self.shapes, self.path)
            flexible.check_override(f, self.shapes, self.path)
            value = self.graph.input(f.name, spec)
            if spec.dtype != "float32":
                value = self.op("cast", [value], to="float32")
            value = self.reshape(value, model_kinds.internal_shape(kind, spec.shape, self.nd, self.rank4_images,
                                                                   self.path, f.name))
            if kind == "image":
                value = model_kinds.preprocess(self, value, f.name, color, self.network.preprocessing)
            self.set_blob(f.name, value)

    def output_value(self, feature):
        if feature.name not in self.blobs:
            raise VerificationError(f"{self.path}: model output {feature.name!r} is not produced by any layer")
        value = self.blobs[feature.name]
        shape = list(self.spec(value).shape)
        if self.nd or len(shape) != 5:
            return value
        t = feature.type
        declared = list(t.multiArrayType.shape) if t.WhichOneof("Type") == "multiArrayType" else []
        if declared and dims.size(declared) == dims.size(shape):
            return self.reshape(value, declared)
        if shape[0] == 1 and shape[1] == 1:
            return self.reshape(value, shape[2:])
        return value

    def _convert(self):
        """Convert the model into the graph's current function; returns its outputs."""
        bad = unsupported_layers(self.network.layers)
        if bad:
            raise UnsupportedOpError(self.path, bad)
        self.declare_inputs()
        self.convert_layers(self.network.layers)
        descr = self.model.description
        labels = model_kinds.class_labels(self.network) if self.kind == "neuralNetworkClassifier" else None
        if labels is not None:
            return self.classifier_outputs(descr, labels)
        return [(f.name, self.output_value(f)) for f in descr.output]

    def build(self):
        """The nn module of the whole model."""
        nn = self.graph.finish(self._convert())
        nn.extra_signature = self.extra_signature
        nn.write_signature()
        return nn

    def build_function(self, symbol):
        """The model as another function `symbol` of the graph's module (an enumerated shape's
        specialisation); returns its entry in the signature's "functions"."""
        self.graph.begin_function(symbol)
        specs = self.graph.seal(self._convert())
        entry = flexible.function_entry(self.graph.inputs, specs, {}, self.graph.unifier)
        return {"entry": symbol, **entry, **self.extra_signature}

    def classifier_outputs(self, descr, labels):
        label_name = descr.predictedFeatureName or "classLabel"
        prob_name = descr.predictedProbabilitiesName
        blob = self.network.labelProbabilityLayerName or prob_name
        if not blob:
            others = [f.name for f in descr.output if f.name != label_name]
            blob = others[0] if others else (self.network.layers[-1].output[0] if self.network.layers else "")
        if blob not in self.blobs:
            raise VerificationError(f"{self.path}: the classifier's probability blob {blob!r} is not produced "
                                    f"by any layer")
        probs = self.blobs[blob]
        n = self.spec(probs).size
        if n != len(labels):
            raise VerificationError(f"{self.path}: the probability blob {blob!r} has {n} elements, "
                                    f"the classifier has {len(labels)} class labels")
        probs = self.reshape(probs, [n])
        index = self.op("arg_max", [probs], axis=0, keep_dimensions=True, output_data_type="int32")
        outputs = []
        for f in descr.output:
            if f.name == label_name:
                outputs.append((f.name, index))
            elif f.name == (prob_name or blob) or f.name == blob:
                outputs.append((f.name, probs))
            else:
                outputs.append((f.name, self.output_value(f)))
        if label_name not in [n for n, _ in outputs]:
            outputs.append((label_name, index))
        self.extra_signature = {"class_labels": labels, "label_outputs": [label_name]}
        return outputs


def build_all(model, path, shapes=None):
    """The model's nn module: one function, or one per combination of its inputs' enumerated
    shapes (flexible.variants; the description's default shapes as @main)."""
    shapes = dict(shapes or {})
    combos = flexible.variants(model.description.input, shapes, path)
    if not combos:
        return Converter(model, path, shapes).build()
    main = Converter(model, path, {**shapes, **combos[0]})
    nn = main.build()
    functions = {flexible.variant_name("main", combo): Converter(model, path, {**shapes, **combo}, main.graph)
                 .build_function(f"fn{i}") for i, combo in enumerate(combos[1:], 1)}
    enumerated = {flexible.variant_name("main", combo): {"function": "main", "shapes": combo} for combo in combos}
    return flexible.assemble(nn, functions, flexible.variant_name("main", combos[0]), enumerated)

