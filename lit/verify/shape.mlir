// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s
// One case per validation message of the data-movement type rules (WebNN throw steps).

// CHECK: (nn.reshape): new_shape [2, 0] has an invalid dimension
func.func @f(%a: tensor<2x3xf32>) -> tensor<2x0xf32> {
  %0 = "nn.reshape"(%a) {new_shape = array<i64: 2, 0>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  return %0 : tensor<2x0xf32>
}

// -----

// CHECK: (nn.reshape): new_shape [4] has 4 elements, the input has 6
func.func @f(%a: tensor<2x3xf32>) -> tensor<4xf32> {
  %0 = "nn.reshape"(%a) {new_shape = array<i64: 4>} : (tensor<2x3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.transpose): permutation [0] must have 2 entries
func.func @f(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "nn.transpose"(%a) {permutation = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.transpose): permutation [0, 2] out of range for rank 2
func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.transpose"(%a) {permutation = array<i64: 0, 2>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: (nn.transpose): permutation [0, 0] contain duplicates
func.func @f(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  %0 = "nn.transpose"(%a) {permutation = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK: (nn.concat): needs at least one input
func.func @f() -> tensor<2xf32> {
  %0 = "nn.concat"() {axis = 0 : i64, operandSegmentSizes = array<i32: 0>} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.concat): axis 2 out of range for rank 2
func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.concat"(%a) {axis = 2 : i64, operandSegmentSizes = array<i32: 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: (nn.concat): inputs must have the same data type, got ['float32', 'int32']
func.func @f(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) -> tensor<4x3xf32> {
  %0 = "nn.concat"(%a, %b) {axis = 0 : i64, operandSegmentSizes = array<i32: 2>} : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.concat): inputs must all have the same rank, got shapes [[2, 3], [6]]
func.func @f(%a: tensor<2x3xf32>, %b: tensor<6xf32>) -> tensor<4x3xf32> {
  %0 = "nn.concat"(%a, %b) {axis = 0 : i64, operandSegmentSizes = array<i32: 2>} : (tensor<2x3xf32>, tensor<6xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// CHECK: (nn.concat): input shapes [[2, 3], [3, 3]] differ outside axis 1
func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  %0 = "nn.concat"(%a, %b) {axis = 1 : i64, operandSegmentSizes = array<i32: 2>} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// CHECK: (nn.concat): output shape [2147483648] has an invalid dimension
func.func @f(%a: tensor<1073741824xi8>, %b: tensor<1073741824xi8>) -> tensor<2147483648xi8> {
  %0 = "nn.concat"(%a, %b) {axis = 0 : i64, operandSegmentSizes = array<i32: 2>} : (tensor<1073741824xi8>, tensor<1073741824xi8>) -> tensor<2147483648xi8>
  return %0 : tensor<2147483648xi8>
}

// -----

// CHECK: (nn.slice): starts and sizes must have 1 entries, got 2 and 1
func.func @f(%a: tensor<4xf32>) -> tensor<3xf32> {
  %0 = "nn.slice"(%a) {starts = array<i64: 0, 0>, sizes = array<i64: 3>} : (tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK: (nn.slice): sizes[0] must be positive, got 0
func.func @f(%a: tensor<4xf32>) -> tensor<0xf32> {
  %0 = "nn.slice"(%a) {starts = array<i64: 0>, sizes = array<i64: 0>} : (tensor<4xf32>) -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

// CHECK: (nn.slice): window 2..5 of dimension 0 exceeds its size 4
func.func @f(%a: tensor<4xf32>) -> tensor<3xf32> {
  %0 = "nn.slice"(%a) {starts = array<i64: 2>, sizes = array<i64: 3>} : (tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK: (nn.split): axis 1 out of range for rank 1
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.split"(%a) {splits = array<i64: 4>, axis = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.split): splits must not be empty
func.func @f(%a: tensor<4xf32>) {
  "nn.split"(%a) {splits = array<i64>} : (tensor<4xf32>) -> ()
  return
}

// -----

// CHECK: (nn.split): splits [0, 4] must be positive
func.func @f(%a: tensor<4xf32>) -> (tensor<0xf32>, tensor<4xf32>) {
  %0:2 = "nn.split"(%a) {splits = array<i64: 0, 4>} : (tensor<4xf32>) -> (tensor<0xf32>, tensor<4xf32>)
  return %0#0, %0#1 : tensor<0xf32>, tensor<4xf32>
}

// -----

// CHECK: (nn.split): splits [1, 2] sum to 3, dimension 0 has size 4
func.func @f(%a: tensor<4xf32>) -> (tensor<1xf32>, tensor<2xf32>) {
  %0:2 = "nn.split"(%a) {splits = array<i64: 1, 2>} : (tensor<4xf32>) -> (tensor<1xf32>, tensor<2xf32>)
  return %0#0, %0#1 : tensor<1xf32>, tensor<2xf32>
}

// -----

// CHECK: (nn.pad): beginning_padding and ending_padding must have 1 entries, got 1 and 2
func.func @f(%a: tensor<4xf32>) -> tensor<5xf32> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 1>, ending_padding = array<i64: 0, 0>} : (tensor<4xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// CHECK: (nn.pad): paddings [-1] and [0] must be non-negative
func.func @f(%a: tensor<4xf32>) -> tensor<3xf32> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: -1>, ending_padding = array<i64: 0>} : (tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK: (nn.pad): attribute 'mode' must be one of ['constant', 'edge', 'reflection', 'symmetric'], got 'wrap'
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 0>, ending_padding = array<i64: 0>, mode = "wrap"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.pad): output shape [2147483648] has an invalid dimension
func.func @f(%a: tensor<4xf32>) -> tensor<2147483648xf32> {
  %0 = "nn.pad"(%a) {beginning_padding = array<i64: 2147483644>, ending_padding = array<i64: 0>} : (tensor<4xf32>) -> tensor<2147483648xf32>
  return %0 : tensor<2147483648xf32>
}

// -----

// CHECK: (nn.expand): new_shape [2, 0] has an invalid dimension
func.func @f(%a: tensor<1xf32>) -> tensor<2x0xf32> {
  %0 = "nn.expand"(%a) {new_shape = array<i64: 2, 0>} : (tensor<1xf32>) -> tensor<2x0xf32>
  return %0 : tensor<2x0xf32>
}

// -----

// CHECK: (nn.expand): input shape [3] is not broadcastable to [2, 4]
func.func @f(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  %0 = "nn.expand"(%a) {new_shape = array<i64: 2, 4>} : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// CHECK: (nn.expand): input shape [2, 3] is not broadcastable to [3]
func.func @f(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  %0 = "nn.expand"(%a) {new_shape = array<i64: 3>} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK: (nn.gather): indices data type must be one of ['int32', 'uint32', 'int64'], got float32
func.func @f(%a: tensor<3xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "nn.gather"(%a, %b) : (tensor<3xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.gather): axis 1 out of range for rank 1
func.func @f(%a: tensor<3xf32>, %b: tensor<2xi32>) -> tensor<2xf32> {
  %0 = "nn.gather"(%a, %b) {axis = 1 : i64} : (tensor<3xf32>, tensor<2xi32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.triangular): input must be of rank >= 2, got shape [3]
func.func @f(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "nn.triangular"(%a) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK: (nn.slice): strides[1] must be positive, got 0
func.func @f(%a: tensor<5x7xf32>) -> tensor<4x7xf32> {
  %0 = "nn.slice"(%a) {starts = array<i64: 0, 0>, sizes = array<i64: 4, 7>, strides = array<i64: 1, 0>}
      : (tensor<5x7xf32>) -> tensor<4x7xf32>
  return %0 : tensor<4x7xf32>
}
