// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// CHECK-LABEL: func.func @tanh
// CHECK: tosa.tanh
func.func @tanh(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.tanh"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Sigmoid is the exact formula (TOSA's approximation is tens of ULP off).
// CHECK-LABEL: func.func @sigmoid
// CHECK: math.exp
// CHECK: arith.divf
func.func @sigmoid(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.sigmoid"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// float16 activations compute in float32 and round once.
// CHECK-LABEL: func.func @elu_f16
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @elu_f16(%a: tensor<4xf16>) -> tensor<4xf16> {
  %0 = "nn.elu"(%a) {alpha = 1.0 : f64} : (tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Options are cast to the input's data type first (0.3 in float16 is 0.300048828).
// CHECK-LABEL: func.func @leaky_relu_f16
// CHECK: arith.constant 0.300048828 : f32
func.func @leaky_relu_f16(%a: tensor<4xf16>) -> tensor<4xf16> {
  %0 = "nn.leaky_relu"(%a) {alpha = 0.3 : f64} : (tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @relu_i8
// CHECK: arith.maxsi
func.func @relu_i8(%a: tensor<4xi8>) -> tensor<4xi8> {
  %0 = "nn.relu"(%a) : (tensor<4xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// CHECK-LABEL: func.func @prelu
// CHECK: tosa.reshape
// CHECK: linalg.generic
// CHECK: arith.minimumf
func.func @prelu(%a: tensor<2x3xf32>, %s: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.prelu"(%a, %s) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Softmax subtracts the maximum along the axis before exponentiating.
// CHECK-LABEL: func.func @softmax
// CHECK: tosa.reduce_max %arg0 axis(1)
// CHECK: tosa.sub
// CHECK: tosa.exp
// CHECK: tosa.reduce_sum {{.*}} axis(1)
// CHECK: arith.divf
func.func @softmax(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = "nn.softmax"(%a) {axis = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// float16 softmax accumulates in float32.
// CHECK-LABEL: func.func @softmax_f16
// CHECK: tosa.cast %arg0 : (tensor<2x5xf16>) -> tensor<2x5xf32>
// CHECK: tosa.reduce_sum {{.*}} axis(0) : (tensor<2x5xf32>) -> tensor<1x5xf32>
// CHECK: tosa.cast {{.*}} -> tensor<2x5xf16>
func.func @softmax_f16(%a: tensor<2x5xf16>) -> tensor<2x5xf16> {
  %0 = "nn.softmax"(%a) {axis = 0 : i64} : (tensor<2x5xf16>) -> tensor<2x5xf16>
  return %0 : tensor<2x5xf16>
}

// -----

// gelu: 1 + erf(z) for x >= 0, an erfc form for x < 0 with x*x/2 split exactly (no cancellation).
// CHECK-LABEL: func.func @gelu
// CHECK: math.erf
// CHECK: arith.constant 4.097000e+03
// CHECK: math.exp
// CHECK: arith.select
func.func @gelu(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.gelu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @rest
// CHECK: math.erf
// CHECK: math.log1p
// CHECK: math.absf
func.func @rest(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.gelu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "nn.softplus"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "nn.softsign"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "nn.hard_sigmoid"(%2) {alpha = 0.2 : f64, beta = 0.5 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "nn.hard_swish"(%3) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = "nn.leaky_relu"(%4) {alpha = 0.1 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %6 = "nn.linear"(%5) {alpha = 2.0 : f64, beta = 1.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  return %6 : tensor<4xf32>
}

// -----

// On the CPU (the default target) softplus keeps math.log1p (gpu.mlir: the GPU form).
// CHECK-LABEL: func.func @softplus_cpu
// CHECK: math.log1p
func.func @softplus_cpu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.softplus"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
