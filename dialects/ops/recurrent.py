"""nn ops: GRU and LSTM networks and cells (WebNN §7.7.20, 21, 28, 29).

They keep the WebNN meaning (one op each) and are lowered by decomposition into matmul, slice,
element-wise and activation ops, following the spec's own decomposition: notably the LSTM
output-gate peephole reads the *incoming* cell state, and with returnSequence the sequence is
ordered by iteration (a backward direction is not re-reversed).
"""
import numpy as np

from estuary import dtypes
from estuary.dialects.core import Bool, Int, Str, Strs, TensorSpec, check, dtype_in, nn_op, same_dtype

ACTIVATIONS = ("relu", "sigmoid", "tanh")
DIRECTIONS = ("forward", "backward", "both")
GRU_LAYOUTS = ("zrn", "rzn")
LSTM_LAYOUTS = ("iofg", "ifgo")


def _shape(spec, expected, what, input):
    if spec is not None:
        same_dtype(input, spec, what=f"input and {what}")
        check(spec.shape == tuple(expected), f"{what} must have shape {list(expected)}, got {list(spec.shape)}")


def _activations(acts, count):
    if acts is not None:
        check(len(acts) == count, f"activations must list {count} functions, got {list(acts)}")


def _network(input, weight, recurrent_weight, steps, hidden_size, direction, gates, what):
    dtype_in(input, dtypes.FLOATS)
    check(input.rank == 3, f"input must be of rank 3 [steps, batch, inputSize], got {list(input.shape)}")
    check(steps > 0 and input.shape[0] == steps, f"steps {steps} must be positive and equal input.shape[0]")
    check(hidden_size > 0, f"hidden_size must be positive, got {hidden_size}")
    nd = 2 if direction == "both" else 1
    _, batch, size = input.shape
    _shape(weight, (nd, gates * hidden_size, size), "weight", input)
    _shape(recurrent_weight, (nd, gates * hidden_size, hidden_size), "recurrent_weight", input)
    return nd, batch



@nn_op("gru", ["input", "weight", "recurrent_weight", "bias?", "recurrent_bias?", "initial_hidden_state?"],
       {"steps": Int(), "hidden_size": Int(), "reset_after": Bool(True), "return_sequence": Bool(False),
        "direction": Str("forward", DIRECTIONS), "layout": Str("zrn", GRU_LAYOUTS),
        "activations": Strs(None, ACTIVATIONS)}, family="recurrent")
def gru(input, weight, recurrent_weight, bias, recurrent_bias, initial_hidden_state, steps, hidden_size,
        reset_after, return_sequence, direction, layout, activations):
    """GRU over `steps`; results [hidden [dirs, batch, h]] (+ sequence [steps, dirs, batch, h])."""
    nd, batch = _network(input, weight, recurrent_weight, steps, hidden_size, direction, 3, "gru")
    _shape(bias, (nd, 3 * hidden_size), "bias", input)
    _shape(recurrent_bias, (nd, 3 * hidden_size), "recurrent_bias", input)
    _shape(initial_hidden_state, (nd, batch, hidden_size), "initial_hidden_state", input)
    _activations(activations, 2)
    hidden = TensorSpec((nd, batch, hidden_size), input.dtype)
    return [hidden] + ([TensorSpec((steps, nd, batch, hidden_size), input.dtype)] if return_sequence else [])


def _cell(input, weight, recurrent_weight, hidden_state, hidden_size, gates):
    dtype_in(input, dtypes.FLOATS)
    check(input.rank == 2, f"input must be of rank 2 [batch, inputSize], got {list(input.shape)}")
    check(hidden_size > 0, f"hidden_size must be positive, got {hidden_size}")
    batch, size = input.shape
    _shape(weight, (gates * hidden_size, size), "weight", input)
    _shape(recurrent_weight, (gates * hidden_size, hidden_size), "recurrent_weight", input)
    _shape(hidden_state, (batch, hidden_size), "hidden_state", input)
    return batch


@nn_op("gru_cell", ["input", "weight", "recurrent_weight", "hidden_state", "bias?", "recurrent_bias?"],
       {"hidden_size": Int(), "reset_after": Bool(True), "layout": Str("zrn", GRU_LAYOUTS),
        "activations": Strs(None, ACTIVATIONS)}, family="recurrent")
def gru_cell(input, weight, recurrent_weight, hidden_state, bias, recurrent_bias, hidden_size, reset_after, layout,
             activations):
    """One GRU step: the new hidden state [batch, h]."""
    batch = _cell(input, weight, recurrent_weight, hidden_state, hidden_size, 3)
    _shape(bias, (3 * hidden_size,), "bias", input)
    _shape(recurrent_bias, (3 * hidden_size,), "recurrent_bias", input)
    _activations(activations, 2)
    return TensorSpec((batch, hidden_size), input.dtype)


@nn_op("lstm", ["input", "weight", "recurrent_weight", "bias?", "recurrent_bias?", "peephole_weight?",
                "initial_hidden_state?", "initial_cell_state?"],
       {"steps": Int(), "hidden_size": Int(), "return_sequence": Bool(False), "direction": Str("forward", DIRECTIONS),
        "layout": Str("iofg", LSTM_LAYOUTS), "activations": Strs(None, ACTIVATIONS)}, family="recurrent")
def lstm(input, weight, recurrent_weight, bias, recurrent_bias, peephole_weight, initial_hidden_state,
         initial_cell_state, steps, hidden_size, return_sequence, direction, layout, activations):
    """LSTM over `steps`; results [hidden, cell] (+ sequence [steps, dirs, batch, h])."""
    nd, batch = _network(input, weight, recurrent_weight, steps, hidden_size, direction, 4, "lstm")
    _shape(bias, (nd, 4 * hidden_size), "bias", input)
    _shape(recurrent_bias, (nd, 4 * hidden_size), "recurrent_bias", input)
    _shape(peephole_weight, (nd, 3 * hidden_size), "peephole_weight", input)
    _shape(initial_hidden_state, (nd, batch, hidden_size), "initial_hidden_state", input)
    _shape(initial_cell_state, (nd, batch, hidden_size), "initial_cell_state", input)
    _activations(activations, 3)
    state = TensorSpec((nd, batch, hidden_size), input.dtype)
    return [state, state] + ([TensorSpec((steps, nd, batch, hidden_size), input.dtype)] if return_sequence else [])


@nn_op("lstm_cell", ["input", "weight", "recurrent_weight", "hidden_state", "cell_state", "bias?", "recurrent_bias?",
                     "peephole_weight?"],
       {"hidden_size": Int(), "layout": Str("iofg", LSTM_LAYOUTS), "activations": Strs(None, ACTIVATIONS)},
       family="recurrent")
def lstm_cell(input, weight, recurrent_weight, hidden_state, cell_state, bias, recurrent_bias, peephole_weight,
              hidden_size, layout, activations):
    """One LSTM step: [new hidden state, new cell state], each [batch, h]."""
    batch = _cell(input, weight, recurrent_weight, hidden_state, hidden_size, 4)
    _shape(cell_state, (batch, hidden_size), "cell_state", input)
    _shape(bias, (4 * hidden_size,), "bias", input)
    _shape(recurrent_bias, (4 * hidden_size,), "recurrent_bias", input)
    _shape(peephole_weight, (3 * hidden_size,), "peephole_weight", input)
    _activations(activations, 3)
    state = TensorSpec((batch, hidden_size), input.dtype)
    return [state, state]
