// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.lsh_projection): hash must be float32, got int32
func.func @f(%h: tensor<2x3xi32>, %x: tensor<2x3xf32>) -> tensor<2xi32> {
  %0 = "nn.lsh_projection"(%h, %x) {type = "sparse", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3xi32>, tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// CHECK: (nn.lsh_projection): sparse hashes have at most 32 bits (hash.shape[1]), got 33
func.func @f(%h: tensor<2x33xf32>, %x: tensor<2x3xf32>) -> tensor<2xi32> {
  %0 = "nn.lsh_projection"(%h, %x) {type = "sparse", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x33xf32>, tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// CHECK: (nn.lsh_projection): weight must have shape [2] (input.shape[0]), got [3]
func.func @f(%h: tensor<2x3xf32>, %x: tensor<2x3xf32>, %w: tensor<3xf32>) -> tensor<2xi32> {
  %0 = "nn.lsh_projection"(%h, %x, %w) {type = "sparse", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// CHECK: (nn.lsh_projection): hash must be of rank 2
func.func @f(%h: tensor<6xf32>, %x: tensor<2x3xf32>) -> tensor<6xi32> {
  %0 = "nn.lsh_projection"(%h, %x) {type = "dense", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<6xf32>, tensor<2x3xf32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
}
