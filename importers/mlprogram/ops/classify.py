"""MIL classify: the classifier's outputs, as Estuary's Core ML classifiers give them (docs/coreml.md):
the predicted label is an int32 class index [1] that `Model.run` maps to its label (the labels
travel in the signature), the probabilities a float32 vector [classes] in label order."""
from __future__ import annotations

from typing import Any

import numpy as np

from estuary.importers.mlprogram.ops import OPS


@OPS.op("classify")
def convert_classify(c: Any, op: Any) -> Any:
    probs = c.x(op, "probabilities")
    classes = c.val(op, "classes")
    labels = [x.item() if isinstance(x, np.generic) else x for x in np.asarray(classes, dtype=object).reshape(-1)]
    labels = [int(x) if isinstance(x, (int, np.integer)) else str(x) for x in labels]
    n = c.spec(probs).size
    c.check(n == len(labels), f"probabilities have {n} elements for {len(labels)} classes")
    probs = c.reshape(probs, [n])
    index = c.op("arg_max", [probs], axis=0, keep_dimensions=True, output_data_type="int32")
    c.extra_signature.update({"class_labels": labels, "label_outputs": [op.outputs[0]]})
    return [index, probs]
