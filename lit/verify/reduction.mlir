// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.reduce_sum): axes [2] out of range for rank 2
func.func @f(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "nn.reduce_sum"(%x) {axes = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.reduce_max): axes [1, 1] contain duplicates
func.func @f(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "nn.reduce_max"(%x) {axes = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: (nn.reduce_mean): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%x: tensor<2x3xi32>) -> tensor<2xi32> {
  %0 = "nn.reduce_mean"(%x) {axes = array<i64: 1>} : (tensor<2x3xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// CHECK: (nn.arg_max): attribute 'output_data_type' must be one of ['int32', 'int64'], got 'uint8'
func.func @f(%x: tensor<2x3xf32>) -> tensor<2xui8> {
  %0 = "nn.arg_max"(%x) {axis = 1 : i64, output_data_type = "uint8"} : (tensor<2x3xf32>) -> tensor<2xui8>
  return %0 : tensor<2xui8>
}

// -----

// CHECK: (nn.arg_min): axis 3 out of range for rank 2
func.func @f(%x: tensor<2x3xf32>) -> tensor<2xi32> {
  %0 = "nn.arg_min"(%x) {axis = 3 : i64} : (tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// CHECK: (nn.arg_max): dimension 0 of size 2147483648 exceeds the int32 maximum 2147483647
func.func @f(%x: tensor<2147483648xi8>) -> tensor<i32> {
  %0 = "nn.arg_max"(%x) {axis = 0 : i64} : (tensor<2147483648xi8>) -> tensor<i32>
  return %0 : tensor<i32>
}
