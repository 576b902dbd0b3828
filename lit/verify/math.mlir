// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: (nn.sinh): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "nn.sinh"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK: (nn.atanh): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "nn.atanh"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK: (nn.round): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "nn.round"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK: (nn.mod): a and b must have the same data type, got ['float16', 'float32']
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  %0 = "nn.mod"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.floor_div): shapes [2, 3] and [1, 4] are not broadcastable
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "nn.floor_div"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
