"""WebNN mappings: gru, gruCell, lstm, lstmCell (§7.7.20, 21, 28, 29).

Option defaults (resetAfter, returnSequence, direction, layout, activations) are the nn
attributes' defaults; gru, lstm and lstmCell return sequences of operands, as the spec's methods do.
"""
from estuary.importers.webnn.ops import OPS


def _int(c, v, what):
    """An [EnforceRange] unsigned long argument."""
    c.check(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32,
            f"{what} must be an unsigned long integer, got {v!r}")
    return v


def _as_list(result):
    return result if isinstance(result, list) else [result]


@OPS.op("gru", params=["input", "weight", "recurrentWeight", "steps", "hiddenSize", "options"],
          operands=["input", "weight", "recurrentWeight"],
          options=["resetAfter", "returnSequence", "direction", "layout", "activations"],
          option_operands=["bias", "recurrentBias", "initialHiddenState"])
def gru(c, input, weight, recurrent_weight, steps, hidden_size, o):
    result = c.op("gru", [input, weight, recurrent_weight, o.get("bias"), o.get("recurrentBias"),
                          o.get("initialHiddenState")],
                  steps=_int(c, steps, "steps"), hidden_size=_int(c, hidden_size, "hiddenSize"),
                  reset_after=o.get("resetAfter"), return_sequence=o.get("returnSequence"),
                  direction=o.get("direction"), layout=o.get("layout"), activations=o.get("activations"))
    return _as_list(result)


@OPS.op("gruCell", params=["input", "weight", "recurrentWeight", "hiddenState", "hiddenSize", "options"],
          operands=["input", "weight", "recurrentWeight", "hiddenState"],
          options=["resetAfter", "layout", "activations"], option_operands=["bias", "recurrentBias"])
def gru_cell(c, input, weight, recurrent_weight, hidden_state, hidden_size, o):
    return c.op("gru_cell", [input, weight, recurrent_weight, hidden_state, o.get("bias"), o.get("recurrentBias")],
                hidden_size=_int(c, hidden_size, "hiddenSize"), reset_after=o.get("resetAfter"),
                layout=o.get("layout"), activations=o.get("activations"))


@OPS.op("lstm", params=["input", "weight", "recurrentWeight", "steps", "hiddenSize", "options"],
          operands=["input", "weight", "recurrentWeight"],
          options=["returnSequence", "direction", "layout", "activations"],
          option_operands=["bias", "recurrentBias", "peepholeWeight", "initialHiddenState", "initialCellState"])
def lstm(c, input, weight, recurrent_weight, steps, hidden_size, o):
    return c.op("lstm", [input, weight, recurrent_weight, o.get("bias"), o.get("recurrentBias"),
                         o.get("peepholeWeight"), o.get("initialHiddenState"), o.get("initialCellState")],
                steps=_int(c, steps, "steps"), hidden_size=_int(c, hidden_size, "hiddenSize"),
                return_sequence=o.get("returnSequence"), direction=o.get("direction"), layout=o.get("layout"),
                activations=o.get("activations"))


@OPS.op("lstmCell", params=["input", "weight", "recurrentWeight", "hiddenState", "cellState", "hiddenSize", "options"],
          operands=["input", "weight", "recurrentWeight", "hiddenState", "cellState"],
          options=["layout", "activations"], option_operands=["bias", "recurrentBias", "peepholeWeight"])
def lstm_cell(c, input, weight, recurrent_weight, hidden_state, cell_state, hidden_size, o):
    return c.op("lstm_cell", [input, weight, recurrent_weight, hidden_state, cell_state, o.get("bias"),
                              o.get("recurrentBias"), o.get("peepholeWeight")],
                hidden_size=_int(c, hidden_size, "hiddenSize"), layout=o.get("layout"),
                activations=o.get("activations"))
