// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.sigmoid): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "nn.sigmoid"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK: (nn.relu): input data type must be one of ['float32', 'float16', 'int32', 'int8'], got uint8
func.func @f(%a: tensor<4xui8>) -> tensor<4xui8> {
  %0 = "nn.relu"(%a) : (tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// CHECK: (nn.prelu): shapes [2, 3] and [1, 4] are not broadcastable
func.func @f(%a: tensor<2x3xf32>, %s: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "nn.prelu"(%a, %s) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: (nn.prelu): input and slope must have the same data type, got ['float16', 'float32']
func.func @f(%a: tensor<2x3xf32>, %s: tensor<3xf16>) -> tensor<2x3xf32> {
  %0 = "nn.prelu"(%a, %s) : (tensor<2x3xf32>, tensor<3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: (nn.softmax): axis 2 out of range for rank 2
func.func @f(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.softmax"(%a) {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: (nn.elu): unknown attribute 'beta'
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "nn.elu"(%a) {beta = 1.0 : f64} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
