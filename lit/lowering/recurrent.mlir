// RUN: estuary-opt %s --split-input-file --nn-verify --nn-decompose | FileCheck %s --check-prefix=DEC
// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s --check-prefix=LOW

// A GRU step decomposes into the spec's matmul / slice / activation ops...
// DEC-LABEL: func.func @gru_cell
// DEC: "nn.slice"
// DEC: "nn.matmul"
// DEC: "nn.sigmoid"
// DEC: "nn.tanh"
// DEC-NOT: "nn.gru_cell"
// ...which then lower like any other op.
// LOW-LABEL: func.func @gru_cell
// LOW: tosa.matmul
// LOW-NOT: nn.
func.func @gru_cell(%x: tensor<1x2xf32>, %w: tensor<9x2xf32>, %r: tensor<9x3xf32>, %h: tensor<1x3xf32>) -> tensor<1x3xf32> {
  %0 = "nn.gru_cell"(%x, %w, %r, %h) {hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<1x2xf32>, tensor<9x2xf32>, tensor<9x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// -----

// A two-step LSTM with its sequence: two cell expansions, results concatenated by iteration.
// DEC-LABEL: func.func @lstm
// DEC-COUNT-6: "nn.sigmoid"
// DEC: "nn.concat"
// DEC-NOT: "nn.lstm"
// LOW-LABEL: func.func @lstm
// LOW-NOT: nn.
func.func @lstm(%x: tensor<2x1x2xf32>, %w: tensor<1x8x2xf32>, %r: tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<2x1x1x2xf32>) {
  %0:3 = "nn.lstm"(%x, %w, %r) {steps = 2 : i64, hidden_size = 2 : i64, return_sequence = true, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<2x1x1x2xf32>)
  return %0#0, %0#1, %0#2 : tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<2x1x1x2xf32>
}
