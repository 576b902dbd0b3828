// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.gru): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%x: tensor<2x1x2xi32>, %w: tensor<1x9x2xi32>, %r: tensor<1x9x3xi32>) -> tensor<1x1x3xi32> {
  %0 = "nn.gru"(%x, %w, %r) {steps = 2 : i64, hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<2x1x2xi32>, tensor<1x9x2xi32>, tensor<1x9x3xi32>) -> tensor<1x1x3xi32>
  return %0 : tensor<1x1x3xi32>
}

// -----

// CHECK: (nn.gru): weight must be of rank 3, got shape [9, 2]
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<9x2xf32>, %r: tensor<1x9x3xf32>) -> tensor<1x1x3xf32> {
  %0 = "nn.gru"(%x, %w, %r) {steps = 2 : i64, hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<9x2xf32>, tensor<1x9x3xf32>) -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}

// -----

// CHECK: (nn.gru): weight must have shape [1, 9, 2], got [1, 6, 2]
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x6x2xf32>, %r: tensor<1x9x3xf32>) -> tensor<1x1x3xf32> {
  %0 = "nn.gru"(%x, %w, %r) {steps = 2 : i64, hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x6x2xf32>, tensor<1x9x3xf32>) -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}

// -----

// direction "both" needs two sets of weights.
// CHECK: (nn.gru): recurrent_weight must have shape [2, 9, 3], got [1, 9, 3]
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<2x9x2xf32>, %r: tensor<1x9x3xf32>) -> tensor<2x1x3xf32> {
  %0 = "nn.gru"(%x, %w, %r) {steps = 2 : i64, hidden_size = 3 : i64, direction = "both", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<2x9x2xf32>, tensor<1x9x3xf32>) -> tensor<2x1x3xf32>
  return %0 : tensor<2x1x3xf32>
}

// -----

// CHECK: (nn.gru): input and bias must have the same data type, got ['float16', 'float32']
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x9x2xf32>, %r: tensor<1x9x3xf32>, %b: tensor<1x9xf16>) -> tensor<1x1x3xf32> {
  %0 = "nn.gru"(%x, %w, %r, %b) {steps = 2 : i64, hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x9x2xf32>, tensor<1x9x3xf32>, tensor<1x9xf16>) -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}

// -----

// CHECK: (nn.gru): initial_hidden_state must have shape [1, 1, 3], got [1, 2, 3]
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x9x2xf32>, %r: tensor<1x9x3xf32>, %h: tensor<1x2x3xf32>) -> tensor<1x1x3xf32> {
  %0 = "nn.gru"(%x, %w, %r, %h) {steps = 2 : i64, hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>} : (tensor<2x1x2xf32>, tensor<1x9x2xf32>, tensor<1x9x3xf32>, tensor<1x2x3xf32>) -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}

// -----

// CHECK: (nn.lstm): input.shape[0] 2 must equal steps 3
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x8x2xf32>, %r: tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>) {
  %0:2 = "nn.lstm"(%x, %w, %r) {steps = 3 : i64, hidden_size = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>)
  return %0#0, %0#1 : tensor<1x1x2xf32>, tensor<1x1x2xf32>
}

// -----

// CHECK: (nn.lstm): steps must be greater than 0, got 0
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x8x2xf32>, %r: tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>) {
  %0:2 = "nn.lstm"(%x, %w, %r) {steps = 0 : i64, hidden_size = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>)
  return %0#0, %0#1 : tensor<1x1x2xf32>, tensor<1x1x2xf32>
}

// -----

// Peephole weights are [numDirections, 3 * hiddenSize] (i, o, f), not one per gate of the layout.
// CHECK: (nn.lstm): peephole_weight must have shape [1, 6], got [1, 8]
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x8x2xf32>, %r: tensor<1x8x2xf32>, %p: tensor<1x8xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>) {
  %0:2 = "nn.lstm"(%x, %w, %r, %p) {steps = 2 : i64, hidden_size = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>, tensor<1x8xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>)
  return %0#0, %0#1 : tensor<1x1x2xf32>, tensor<1x1x2xf32>
}

// -----

// hiddenSize * 8 must be a valid dimension (in the range of long), as some platforms concatenate the biases.
// CHECK: (nn.lstm): hidden_size * 8 must be a valid dimension (1..2147483647), got hidden_size 300000000
func.func @f(%x: tensor<1x1x2xf32>, %w: tensor<1x1200000000x2xf32>, %r: tensor<1x1200000000x300000000xf32>) -> (tensor<1x1x300000000xf32>, tensor<1x1x300000000xf32>) {
  %0:2 = "nn.lstm"(%x, %w, %r) {steps = 1 : i64, hidden_size = 300000000 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<1x1x2xf32>, tensor<1x1200000000x2xf32>, tensor<1x1200000000x300000000xf32>) -> (tensor<1x1x300000000xf32>, tensor<1x1x300000000xf32>)
  return %0#0, %0#1 : tensor<1x1x300000000xf32>, tensor<1x1x300000000xf32>
}

// -----

// A sequence result exists only with return_sequence.
// CHECK: (nn.lstm): result types ['float32[1, 1, 2]', 'float32[1, 1, 2]', 'float32[2, 1, 1, 2]'] do not match the inferred ['float32[1, 1, 2]', 'float32[1, 1, 2]']
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x8x2xf32>, %r: tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<2x1x1x2xf32>) {
  %0:3 = "nn.lstm"(%x, %w, %r) {steps = 2 : i64, hidden_size = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<2x1x1x2xf32>)
  return %0#0, %0#1, %0#2 : tensor<1x1x2xf32>, tensor<1x1x2xf32>, tensor<2x1x1x2xf32>
}

// -----

// CHECK: (nn.lstm): attribute 'direction' must be one of ['forward', 'backward', 'both'], got 'reverse'
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x8x2xf32>, %r: tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>) {
  %0:2 = "nn.lstm"(%x, %w, %r) {steps = 2 : i64, hidden_size = 2 : i64, direction = "reverse", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>)
  return %0#0, %0#1 : tensor<1x1x2xf32>, tensor<1x1x2xf32>
}

// -----

// CHECK: (nn.lstm_cell): activations must list 3 functions, got ['sigmoid']
func.func @f(%x: tensor<1x2xf32>, %w: tensor<8x2xf32>, %r: tensor<8x2xf32>, %h: tensor<1x2xf32>, %c: tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %0:2 = "nn.lstm_cell"(%x, %w, %r, %h, %c) {hidden_size = 2 : i64, activations = ["sigmoid"], operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<1x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>)
  return %0#0, %0#1 : tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

// CHECK: (nn.lstm_cell): attribute 'activations' entries must be among ['relu', 'sigmoid', 'tanh'], got 'gelu'
func.func @f(%x: tensor<1x2xf32>, %w: tensor<8x2xf32>, %r: tensor<8x2xf32>, %h: tensor<1x2xf32>, %c: tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %0:2 = "nn.lstm_cell"(%x, %w, %r, %h, %c) {hidden_size = 2 : i64, activations = ["sigmoid", "gelu", "tanh"], operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<1x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>)
  return %0#0, %0#1 : tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

// CHECK: (nn.lstm_cell): cell_state must have shape [1, 2], got [2, 2]
func.func @f(%x: tensor<1x2xf32>, %w: tensor<8x2xf32>, %r: tensor<8x2xf32>, %h: tensor<1x2xf32>, %c: tensor<2x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %0:2 = "nn.lstm_cell"(%x, %w, %r, %h, %c) {hidden_size = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<1x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<1x2xf32>, tensor<2x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>)
  return %0#0, %0#1 : tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

// CHECK: (nn.gru_cell): hidden_state must be of rank 2, got shape [1, 1, 3]
func.func @f(%x: tensor<1x2xf32>, %w: tensor<9x2xf32>, %r: tensor<9x3xf32>, %h: tensor<1x1x3xf32>) -> tensor<1x3xf32> {
  %0 = "nn.gru_cell"(%x, %w, %r, %h) {hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<1x2xf32>, tensor<9x2xf32>, tensor<9x3xf32>, tensor<1x1x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// -----

// CHECK: (nn.gru_cell): recurrent_bias must have shape [9], got [1, 9]
func.func @f(%x: tensor<1x2xf32>, %w: tensor<9x2xf32>, %r: tensor<9x3xf32>, %h: tensor<1x3xf32>, %rb: tensor<1x9xf32>) -> tensor<1x3xf32> {
  %0 = "nn.gru_cell"(%x, %w, %r, %h, %rb) {hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1>} : (tensor<1x2xf32>, tensor<9x2xf32>, tensor<9x3xf32>, tensor<1x3xf32>, tensor<1x9xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// -----

// CHECK: (nn.gru_cell): attribute 'layout' must be one of ['zrn', 'rzn'], got 'nrz'
func.func @f(%x: tensor<1x2xf32>, %w: tensor<9x2xf32>, %r: tensor<9x3xf32>, %h: tensor<1x3xf32>) -> tensor<1x3xf32> {
  %0 = "nn.gru_cell"(%x, %w, %r, %h) {hidden_size = 3 : i64, layout = "nrz", operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<1x2xf32>, tensor<9x2xf32>, tensor<9x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
