// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s
// One case per validation message of the indexing type rules.

// CHECK: (nn.tile): repetitions [2] must have 2 entries (the input rank)
func.func @f(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = "nn.tile"(%a) {repetitions = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.tile): repetitions [2, 0] must be positive
func.func @f(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = "nn.tile"(%a) {repetitions = array<i64: 2, 0>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.gather_elements): indices shape [2, 2] must match input shape [3, 4] outside axis 1
func.func @f(%a: tensor<3x4xf32>, %i: tensor<2x2xi32>) -> tensor<2x2xf32> {
  %0 = "nn.gather_elements"(%a, %i) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<2x2xi32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK: (nn.gather_nd): indices.shape[-1] = 3 must be in 1..2 (the input rank)
func.func @f(%a: tensor<3x4xf32>, %i: tensor<2x3xi32>) -> tensor<2xf32> {
  %0 = "nn.gather_nd"(%a, %i) : (tensor<3x4xf32>, tensor<2x3xi32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.gather_nd): indices data type must be one of ['int32', 'uint32', 'int64'], got float32
func.func @f(%a: tensor<3x4xf32>, %i: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = "nn.gather_nd"(%a, %i) : (tensor<3x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK: (nn.scatter_elements): indices [2, 3] and updates [2, 2] must have the same shape
func.func @f(%a: tensor<4x3xf32>, %i: tensor<2x3xi32>, %u: tensor<2x2xf32>) -> tensor<4x3xf32> {
  %0 = "nn.scatter_elements"(%a, %i, %u) {axis = 0 : i64, reduction = "add"} : (tensor<4x3xf32>, tensor<2x3xi32>, tensor<2x2xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.scatter_elements): reduction 'div' needs a float input, got int32
func.func @f(%a: tensor<4x3xi32>, %i: tensor<2x3xi32>, %u: tensor<2x3xi32>) -> tensor<4x3xi32> {
  %0 = "nn.scatter_elements"(%a, %i, %u) {axis = 0 : i64, reduction = "div"} : (tensor<4x3xi32>, tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<4x3xi32>
  return %0 : tensor<4x3xi32>
}

// -----

// CHECK: (nn.scatter_nd): updates must have shape [2, 3], got [2]
func.func @f(%a: tensor<4x3xf32>, %i: tensor<2x1xi32>, %u: tensor<2xf32>) -> tensor<4x3xf32> {
  %0 = "nn.scatter_nd"(%a, %i, %u) {reduction = "none"} : (tensor<4x3xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.cumulative_sum): axis 2 out of range for rank 2
func.func @f(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = "nn.cumulative_sum"(%a) {axis = 2 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.top_k): k = 5 must be in 1..3 (dimension 1)
func.func @f(%a: tensor<4x3xf32>) -> (tensor<4x5xf32>, tensor<4x5xi32>) {
  %0:2 = "nn.top_k"(%a) {k = 5 : i64, axis = 1 : i64} : (tensor<4x3xf32>) -> (tensor<4x5xf32>, tensor<4x5xi32>)
  return %0#0, %0#1 : tensor<4x5xf32>, tensor<4x5xi32>
}

// -----

// CHECK: (nn.reverse_sequence): lengths must have shape [4], got [3]
func.func @f(%a: tensor<4x3xf32>, %l: tensor<3xi32>) -> tensor<4x3xf32> {
  %0 = "nn.reverse_sequence"(%a, %l) {batch_axis = 0 : i64, sequence_axis = 1 : i64} : (tensor<4x3xf32>, tensor<3xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.reverse): axes [0, 0] contain duplicates
func.func @f(%a: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = "nn.reverse"(%a) {axes = array<i64: 0, 0>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.non_max_suppression): scores must have shape [1, 6], got [1, 5]
func.func @f(%b: tensor<1x6x4xf32>, %s: tensor<1x5xf32>) -> (tensor<1x3xi32>, tensor<1xi32>) {
  %0:2 = "nn.non_max_suppression"(%b, %s) {max_boxes = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x6x4xf32>, tensor<1x5xf32>) -> (tensor<1x3xi32>, tensor<1xi32>)
  return %0#0, %0#1 : tensor<1x3xi32>, tensor<1xi32>
}

// -----

// CHECK: (nn.non_max_suppression): boxes must have shape [B, N, 4], got [1, 6, 3]
func.func @f(%b: tensor<1x6x3xf32>, %s: tensor<1x6xf32>) -> (tensor<1x3xi32>, tensor<1xi32>) {
  %0:2 = "nn.non_max_suppression"(%b, %s) {max_boxes = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x6x3xf32>, tensor<1x6xf32>) -> (tensor<1x3xi32>, tensor<1xi32>)
  return %0#0, %0#1 : tensor<1x3xi32>, tensor<1xi32>
}
