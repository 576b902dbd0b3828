// RUN: not estuary-opt %s --split-input-file --nn-verify 2>&1 | FileCheck %s

// CHECK: operation 'bad_add' (nn.add): a and b must have the same data type, got ['float32', 'int32']
func.func @f(%a: tensor<4xf32>, %b: tensor<4xi32>) -> tensor<4xf32> {
  %0 = "nn.add"(%a, %b) : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32> loc("bad_add")
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.add): shapes [2, 3] and [1, 4] are not broadcastable
func.func @f(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "nn.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: (nn.sqrt): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "nn.sqrt"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK: (nn.equal): result types ['float32[4]'] do not match the inferred ['uint8[4]']
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.equal"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.cast): attribute 'to' must be one of
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.cast"(%a) {to = "float64"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.clamp): min_value 2.0 is greater than max_value 1.0
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.clamp"(%a) {min_value = 2.0 : f64, max_value = 1.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: (nn.is_nan): input data type must be one of ['float32', 'float16'], got int32
func.func @f(%a: tensor<4xi32>) -> tensor<4xui8> {
  %0 = "nn.is_nan"(%a) : (tensor<4xi32>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}
