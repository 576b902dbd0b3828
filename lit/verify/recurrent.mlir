// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.gru): weight must have shape [1, 9, 2], got [1, 6, 2]
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x6x2xf32>, %r: tensor<1x9x3xf32>) -> tensor<1x1x3xf32> {
  %0 = "nn.gru"(%x, %w, %r) {steps = 2 : i64, hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x6x2xf32>, tensor<1x9x3xf32>) -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}

// -----

// CHECK: (nn.lstm): steps 3 must be positive and equal input.shape[0]
func.func @f(%x: tensor<2x1x2xf32>, %w: tensor<1x8x2xf32>, %r: tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>) {
  %0:2 = "nn.lstm"(%x, %w, %r) {steps = 3 : i64, hidden_size = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<2x1x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>)
  return %0#0, %0#1 : tensor<1x1x2xf32>, tensor<1x1x2xf32>
}

// -----

// CHECK: (nn.lstm_cell): activations must list 3 functions, got ['sigmoid']
func.func @f(%x: tensor<1x2xf32>, %w: tensor<8x2xf32>, %r: tensor<8x2xf32>, %h: tensor<1x2xf32>, %c: tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %0:2 = "nn.lstm_cell"(%x, %w, %r, %h, %c) {hidden_size = 2 : i64, activations = ["sigmoid"], operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>} : (tensor<1x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>)
  return %0#0, %0#1 : tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

// CHECK: (nn.gru_cell): attribute 'layout' must be one of ['zrn', 'rzn'], got 'nrz'
func.func @f(%x: tensor<1x2xf32>, %w: tensor<9x2xf32>, %r: tensor<9x3xf32>, %h: tensor<1x3xf32>) -> tensor<1x3xf32> {
  %0 = "nn.gru_cell"(%x, %w, %r, %h) {hidden_size = 3 : i64, layout = "nrz", operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<1x2xf32>, tensor<9x2xf32>, tensor<9x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}
