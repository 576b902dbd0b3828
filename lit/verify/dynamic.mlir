// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s
// Type rules with dynamic dimensions: what they refuse, and how (docs/dynamic-shapes.md).

// An op whose lowering takes fixed shapes only names the operand and its symbols.
// CHECK: (nn.lstm): nn.lstm does not take dynamic dimensions: operand 'input' is float32[seq, 1, 4] (seq=1..64)
func.func @f(%x: tensor<?x1x4xf32, #nn.dims<"seq; seq=1..64">>, %w: tensor<1x8x4xf32>, %r: tensor<1x8x2xf32>) -> tensor<1x1x2xf32> {
  %0:2 = "nn.lstm"(%x, %w, %r) {steps = 4 : i64, hidden_size = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<?x1x4xf32, #nn.dims<"seq; seq=1..64">>, tensor<1x8x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x1x2xf32>, tensor<1x1x2xf32>)
  return %0#0 : tensor<1x1x2xf32>
}

// -----

// The declared result must be the inferred expression.
// CHECK: (nn.concat): result types ['float32[2, seq]'] do not match the inferred ['float32[2, 2*seq]']
func.func @f(%a: tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<2x?xf32, #nn.dims<"seq; seq=1..64">> {
  %0 = "nn.concat"(%a, %a) {axis = 1 : i64, operandSegmentSizes = array<i32: 2>} : (tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>, tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>
  return %0 : tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>
}

// -----

// A '?' without the encoding that names it.
// CHECK: has dynamic dimensions without an #nn.dims encoding naming them
func.func @f(%a: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = "nn.relu"(%a) : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// Only batch and spatial dimensions of a convolution may be dynamic.
// CHECK: (nn.conv2d): the input channels (c) must be fixed
func.func @f(%x: tensor<1x?x8x8xf32, #nn.dims<"c; c=1..16">>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x?x8x8xf32, #nn.dims<"c; c=1..16">>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}

// -----

// A derived dimension that no input size makes positive.
// CHECK: (nn.conv2d): the result would be float32[1, 4, h - 4, 4]: the dimension h - 4 is never positive (h=1..4)
func.func @f(%x: tensor<1x3x?x8xf32, #nn.dims<"h; h=1..4">>, %w: tensor<4x3x5x5xf32>) -> tensor<1x4x?x4xf32, #nn.dims<"h - 4; h=1..4">> {
  %0 = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x?x8xf32, #nn.dims<"h; h=1..4">>, tensor<4x3x5x5xf32>) -> tensor<1x4x?x4xf32, #nn.dims<"h - 4; h=1..4">>
  return %0 : tensor<1x4x?x4xf32, #nn.dims<"h - 4; h=1..4">>
}

// -----

// A slice window must fit for every size the symbol can take.
// CHECK: (nn.slice): window 2..seq + 2 of dimension 1 exceeds its size seq
func.func @f(%a: tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<2x?xf32, #nn.dims<"seq; seq=1..64">> {
  %0 = "nn.slice"(%a) {starts = "0, 2; seq=1..64", sizes = "2, seq; seq=1..64"} : (tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>
  return %0 : tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>
}

// -----

// Symbols whose ranges do not meet cannot be one length.
// CHECK: (nn.add): shapes [2, a] and [2, b] are not broadcastable
func.func @f(%a: tensor<2x?xf32, #nn.dims<"a; a=1..8">>, %b: tensor<2x?xf32, #nn.dims<"b; b=9..16">>) -> tensor<2x?xf32, #nn.dims<"a; a=1..8">> {
  %0 = "nn.add"(%a, %b) : (tensor<2x?xf32, #nn.dims<"a; a=1..8">>, tensor<2x?xf32, #nn.dims<"b; b=9..16">>) -> tensor<2x?xf32, #nn.dims<"a; a=1..8">>
  return %0 : tensor<2x?xf32, #nn.dims<"a; a=1..8">>
}
