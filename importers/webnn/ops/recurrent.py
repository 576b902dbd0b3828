"""WebNN mappings: gru, gruCell, lstm, lstmCell (§7.7.20, 21, 28, 29).

The registrations state the spec's option defaults (resetAfter, returnSequence, direction,
layout); an option left out gets the nn attribute's default, the same value (js/webnn's corpus test
imports each option given as its default and compares the modules). gru, lstm and lstmCell return
sequences of operands, as the spec's methods do.
"""
from estuary.importers.webnn.ops import OPS


def _int(c, v, what):
    """An [EnforceRange] unsigned long argument."""
    c.check(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**32,
            f"{what} must be an unsigned long integer, got {v!r}")
    return v


def _as_list(result):
    return result if isinstance(result, list) else [result]


_WEIGHTS = {"input": "MLOperand", "weight": "MLOperand", "recurrentWeight": "MLOperand"}
_NETWORK = {**_WEIGHTS, "steps": "unsigned long", "hiddenSize": "unsigned long"}
_BIASES = {"bias": "MLOperand", "recurrentBias": "MLOperand"}
_COMMON = {"activations": "sequence<MLRecurrentNetworkActivation>"}
_SEQUENCE = {"returnSequence": "boolean = false", "direction": 'MLRecurrentNetworkDirection = "forward"'}
_GRU = {"resetAfter": "boolean = true", "layout": 'MLGruWeightLayout = "zrn"'}
_LSTM = {"peepholeWeight": "MLOperand", "layout": 'MLLstmWeightLayout = "iofg"'}


@OPS.op("gru", params=_NETWORK,
        options={**_BIASES, **_COMMON, **_SEQUENCE, **_GRU, "initialHiddenState": "MLOperand"})
def gru(c, input, weight, recurrent_weight, steps, hidden_size, o):
    result = c.op("gru", [input, weight, recurrent_weight, o.get("bias"), o.get("recurrentBias"),
                          o.get("initialHiddenState")],
                  steps=_int(c, steps, "steps"), hidden_size=_int(c, hidden_size, "hiddenSize"),
                  reset_after=o.get("resetAfter"), return_sequence=o.get("returnSequence"),
                  direction=o.get("direction"), layout=o.get("layout"), activations=o.get("activations"))
    return _as_list(result)


@OPS.op("gruCell", params={**_WEIGHTS, "hiddenState": "MLOperand", "hiddenSize": "unsigned long"},
        options={**_BIASES, **_COMMON, **_GRU})
def gru_cell(c, input, weight, recurrent_weight, hidden_state, hidden_size, o):
    return c.op("gru_cell", [input, weight, recurrent_weight, hidden_state, o.get("bias"), o.get("recurrentBias")],
                hidden_size=_int(c, hidden_size, "hiddenSize"), reset_after=o.get("resetAfter"),
                layout=o.get("layout"), activations=o.get("activations"))


@OPS.op("lstm", params=_NETWORK,
        options={**_BIASES, **_COMMON, **_SEQUENCE, **_LSTM, "initialHiddenState": "MLOperand",
                 "initialCellState": "MLOperand"})
def lstm(c, input, weight, recurrent_weight, steps, hidden_size, o):
    return c.op("lstm", [input, weight, recurrent_weight, o.get("bias"), o.get("recurrentBias"),
                         o.get("peepholeWeight"), o.get("initialHiddenState"), o.get("initialCellState")],
                steps=_int(c, steps, "steps"), hidden_size=_int(c, hidden_size, "hiddenSize"),
                return_sequence=o.get("returnSequence"), direction=o.get("direction"), layout=o.get("layout"),
                activations=o.get("activations"))


@OPS.op("lstmCell", params={**_WEIGHTS, "hiddenState": "MLOperand", "cellState": "MLOperand",
                            "hiddenSize": "unsigned long"},
        options={**_BIASES, **_COMMON, **_LSTM})
def lstm_cell(c, input, weight, recurrent_weight, hidden_state, cell_state, hidden_size, o):
    return c.op("lstm_cell", [input, weight, recurrent_weight, hidden_state, cell_state, o.get("bias"),
                              o.get("recurrentBias"), o.get("peepholeWeight")],
                hidden_size=_int(c, hidden_size, "hiddenSize"), layout=o.get("layout"),
                activations=o.get("activations"))
