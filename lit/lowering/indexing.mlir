// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// CHECK-LABEL: func.func @tile_reverse
// CHECK: tosa.tile
// CHECK: tosa.reverse
func.func @tile_reverse(%a: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %0 = "nn.tile"(%a) {repetitions = array<i64: 2, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %1 = "nn.reverse"(%0) {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}

// -----

// Gathers read the input with tensor.extract at normalized (wrapped, clamped) coordinates.
// CHECK-LABEL: func.func @gathers
// CHECK: linalg.generic
// CHECK: arith.maxsi
// CHECK: tensor.extract
// CHECK: linalg.generic
// CHECK: tensor.extract
func.func @gathers(%a: tensor<3x4xf32>, %i: tensor<3x2xi32>, %n: tensor<2x2xi64>) -> (tensor<3x2xf32>, tensor<2xf32>) {
  %0 = "nn.gather_elements"(%a, %i) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi32>) -> tensor<3x2xf32>
  %1 = "nn.gather_nd"(%a, %n) : (tensor<3x4xf32>, tensor<2x2xi64>) -> tensor<2xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<2xf32>
}

// -----

// Scatters: a reduction over the update positions, each matching position combined in order.
// CHECK-LABEL: func.func @scatters
// CHECK: linalg.generic
// CHECK-SAME: reduction
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.maximumf
func.func @scatters(%a: tensor<4x3xf32>, %i: tensor<2x3xi32>, %u: tensor<2x3xf32>, %n: tensor<2x1xi64>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = "nn.scatter_elements"(%a, %i, %u) {axis = 0 : i64, reduction = "add"} : (tensor<4x3xf32>, tensor<2x3xi32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %1 = "nn.scatter_nd"(%a, %n, %u) {reduction = "max"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @cumsum_reversed
// CHECK: tosa.reverse
// CHECK: linalg.generic
// CHECK: tosa.reverse
func.func @cumsum_reversed(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = "nn.cumulative_sum"(%a) {axis = 1 : i64, exclusive = true, reversed = true} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// top_k: a rank per element (stable comparison count), then the element of each rank r < k.
// CHECK-LABEL: func.func @top_k
// CHECK: linalg.generic
// CHECK: arith.cmpf ogt
// CHECK: linalg.generic
func.func @top_k(%a: tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>) {
  %0:2 = "nn.top_k"(%a) {k = 2 : i64, axis = 1 : i64, largest = true, indices_data_type = "int32"} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xi32>)
  return %0#0, %0#1 : tensor<2x2xf32>, tensor<2x2xi32>
}

// -----

// CHECK-LABEL: func.func @reverse_sequence
// CHECK: linalg.generic
// CHECK: tensor.extract
func.func @reverse_sequence(%a: tensor<2x5xf32>, %l: tensor<2xi32>) -> tensor<2x5xf32> {
  %0 = "nn.reverse_sequence"(%a, %l) {batch_axis = 0 : i64, sequence_axis = 1 : i64} : (tensor<2x5xf32>, tensor<2xi32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// NMS: stable score ranks, an scf.for over sorted positions suppressing later overlapping boxes,
// then compaction of the kept boxes into max_boxes slots.
// CHECK-LABEL: func.func @nms
// CHECK: linalg.generic
// CHECK: scf.for
// CHECK: arith.divf
// CHECK: scf.yield
// CHECK: linalg.generic
func.func @nms(%b: tensor<1x6x4xf32>, %s: tensor<1x6xf32>) -> (tensor<1x3xi32>, tensor<1xi32>) {
  %0:2 = "nn.non_max_suppression"(%b, %s) {iou_threshold = 0.5 : f64, score_threshold = 0.1 : f64, max_boxes = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x6x4xf32>, tensor<1x6xf32>) -> (tensor<1x3xi32>, tensor<1xi32>)
  return %0#0, %0#1 : tensor<1x3xi32>, tensor<1xi32>
}
