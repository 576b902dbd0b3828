// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// CHECK-LABEL: func.func @reshape_transpose
// CHECK: tosa.transpose %arg0 perms([1, 0])
// CHECK: tosa.reshape
func.func @reshape_transpose(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %0 = "nn.transpose"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = "nn.reshape"(%0) {new_shape = array<i64: 6>} : (tensor<3x2xf32>) -> tensor<6xf32>
  return %1 : tensor<6xf32>
}

// -----

// CHECK-LABEL: func.func @concat_split
// CHECK: tosa.concat %arg0, %arg1 axis(1)
// CHECK: tosa.slice
// CHECK: tosa.slice
func.func @concat_split(%a: tensor<2x3xi64>, %b: tensor<2x1xi64>) -> (tensor<2x1xi64>, tensor<2x3xi64>) {
  %0 = "nn.concat"(%a, %b) {axis = 1 : i64, operandSegmentSizes = array<i32: 2>} : (tensor<2x3xi64>, tensor<2x1xi64>) -> tensor<2x4xi64>
  %1:2 = "nn.split"(%0) {splits = array<i64: 1, 3>, axis = 1 : i64} : (tensor<2x4xi64>) -> (tensor<2x1xi64>, tensor<2x3xi64>)
  return %1#0, %1#1 : tensor<2x1xi64>, tensor<2x3xi64>
}

// -----

// Reflection padding mirrors slices (excluding the edge) with tosa.reverse.
// CHECK-LABEL: func.func @pad_reflect
// CHECK: tosa.slice
// CHECK: tosa.reverse
// CHECK: tosa.concat
func.func @pad_reflect(%a: tensor<4xf32>) -> tensor<7xf32> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 2>, ending_padding = array<i64: 1>, mode = "reflection"} : (tensor<4xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

// CHECK-LABEL: func.func @pad_constant
// CHECK: tosa.pad
func.func @pad_constant(%a: tensor<4xf32>) -> tensor<7xf32> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 2>, ending_padding = array<i64: 1>, value = 3.0 : f64} : (tensor<4xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

// CHECK-LABEL: func.func @expand
// CHECK: tosa.reshape
// CHECK: tosa.tile
func.func @expand(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.expand"(%a) {new_shape = array<i64: 2, 3>} : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Gather clamps and wraps indices before reading (never out of bounds).
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: arith.select
// CHECK: arith.minsi
// CHECK: tensor.extract %arg0
func.func @gather(%a: tensor<4x3xf32>, %i: tensor<2xi32>) -> tensor<2x3xf32> {
  %0 = "nn.gather"(%a, %i) {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2xi32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @triangular
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: arith.cmpi sle
func.func @triangular(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = "nn.triangular"(%a) {upper = false, diagonal = 1 : i64} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

// Reflection wider than the input mirrors in rounds: 2 values (what a size-3 input holds), then
// 3 more mirrored about the new edge of the grown tensor.
// CHECK-LABEL: func.func @pad_reflect_twice
// CHECK: %[[R1:.*]] = tosa.reverse %{{.*}} axis(0) : (tensor<2xf32>)
// CHECK: %[[G:.*]] = tosa.concat %[[R1]], %arg0, %{{.*}} axis(0) : {{.*}} -> tensor<6xf32>
// CHECK: tosa.slice %[[G]]
// CHECK: %[[R2:.*]] = tosa.reverse %{{.*}} axis(0) : (tensor<3xf32>)
// CHECK: tosa.concat %[[R2]], %[[G]] axis(0) : {{.*}} -> tensor<9xf32>
func.func @pad_reflect_twice(%a: tensor<3xf32>) -> tensor<9xf32> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 5>, ending_padding = array<i64: 1>, mode = "reflection"} : (tensor<3xf32>) -> tensor<9xf32>
  return %0 : tensor<9xf32>
}

// -----

// Edge padding tiles the first/last slice.
// CHECK-LABEL: func.func @pad_edge
// CHECK: tosa.slice %arg0
// CHECK: %[[LAST:.*]] = tosa.slice %arg0
// CHECK: %[[T:.*]] = tosa.tile %[[LAST]]{{.*}} -> tensor<2x2xi64>
// CHECK: tosa.concat %{{.*}}, %arg0, %[[T]] axis(1)
func.func @pad_edge(%a: tensor<2x3xi64>) -> tensor<2x6xi64> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 0, 1>, ending_padding = array<i64: 0, 2>, mode = "edge"} : (tensor<2x3xi64>) -> tensor<2x6xi64>
  return %0 : tensor<2x6xi64>
}

// -----

// The pad value is cast to the input's type as the spec casts an MLNumber: 2.5 rounds half to
// even for int32, 300 clamps to 255 for uint8 (stored as signless i8 -1).
// CHECK-LABEL: func.func @pad_value_cast
// CHECK: tosa.const values(dense<2> : tensor<1xi32>)
// CHECK: tosa.const values(dense<-1> : tensor<1xi8>)
func.func @pad_value_cast(%a: tensor<4xi32>, %b: tensor<4xui8>) -> (tensor<5xi32>, tensor<5xui8>) {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 1>, ending_padding = array<i64: 0>, value = 2.5 : f64} : (tensor<4xi32>) -> tensor<5xi32>
  %1 = "nn.pad"(%b) {beginning_padding = array<i64: 1>, ending_padding = array<i64: 0>, value = 300.0 : f64} : (tensor<4xui8>) -> tensor<5xui8>
  return %0, %1 : tensor<5xi32>, tensor<5xui8>
}

// -----

// slice with strides: a strided tensor.extract_slice of ceil(size / stride) elements per dimension.
// CHECK-LABEL: func.func @slice_strides
// CHECK: tensor.extract_slice %{{.*}}[1, 0] [2, 3] [2, 3] : tensor<5x7xf32> to tensor<2x3xf32>
// CHECK-NOT: "nn.
func.func @slice_strides(%a: tensor<5x7xf32>) -> tensor<2x3xf32> {
  %0 = "nn.slice"(%a) {starts = array<i64: 1, 0>, sizes = array<i64: 4, 7>, strides = array<i64: 2, 3>}
      : (tensor<5x7xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
