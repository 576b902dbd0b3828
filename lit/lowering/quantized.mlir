// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// uint8 enters the TOSA convolution as int8 (xor 0x80 = x - 128, zero points shifted by -128),
// accumulates in i32 with the bias, and is requantized in i64: m = 0.25 * 2^32, >> 32, rounding half
// away from zero, + output zero point, clamped to [0, 255]. Padded, the input passes through a
// barrier on llvm-cpu (so IREE data-tiles the int8 product that feeds it).
// CHECK-LABEL: func.func @conv
// CHECK: arith.xori %{{.*}}, %c-128_i8 : i8
// CHECK: util.optimization_barrier {estuary.int8_pad_barrier} %{{.*}} : tensor<1x5x5x2xi8>
// CHECK: tosa.const values(dense<-8> : tensor<1xi8>)
// CHECK: tosa.const values(dense<-125> : tensor<1xi8>)
// CHECK: tosa.conv2d {{.*}} pad([1, 1, 1, 1]) stride([2, 2]) dilation([1, 1]) acc_type(i32) {{.*}} -> tensor<1x3x3x3xi32>
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: arith.constant 1073741824 : i64
// CHECK: arith.constant 2147483648 : i64
// CHECK: arith.shrsi
// CHECK: arith.cmpi sge
// CHECK: arith.select
// CHECK: arith.constant 10 : i64
// CHECK: arith.trunci %{{.*}} : i64 to i8
func.func @conv(%x: tensor<1x5x5x2xui8>, %w: tensor<3x3x3x2xui8>, %b: tensor<3xi32>) -> tensor<1x3x3x3xui8> {
  %0 = "nn.quantized_conv2d"(%x, %w, %b) {input_zero_point = 120 : i64, filter_zero_point = 3 : i64, multiplier = 0.25 : f64, output_zero_point = 10 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x5x5x2xui8>, tensor<3x3x3x2xui8>, tensor<3xi32>) -> tensor<1x3x3x3xui8>
  return %0 : tensor<1x3x3x3xui8>
}

// -----

// Depthwise: the [1, KH, KW, C*M] filter becomes TOSA's [KH, KW, C, M]; the bias defaults to zeros.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: util.optimization_barrier
// CHECK: tosa.const values(dense<0> : tensor<4xi32>)
// CHECK: tosa.depthwise_conv2d {{.*}} : (tensor<1x4x4x2xi8>, tensor<3x3x2x2xi8>, tensor<4xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x2x4xi32>
// CHECK: arith.constant 6 : i64
// CHECK: arith.constant 200 : i64
func.func @depthwise(%x: tensor<1x4x4x2xui8>, %w: tensor<1x3x3x4xui8>) -> tensor<1x2x2x4xui8> {
  %0 = "nn.quantized_conv2d"(%x, %w) {filter_layout = "ihwo", multiplier = 0.5 : f64, output_min = 6 : i64, output_max = 200 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x4x4x2xui8>, tensor<1x3x3x4xui8>) -> tensor<1x2x2x4xui8>
  return %0 : tensor<1x2x2x4xui8>
}

// -----

// CHECK-LABEL: func.func @matmul
// CHECK: tosa.transpose
// CHECK: tosa.matmul {{.*}} : (tensor<1x2x3xi8>, tensor<1x3x4xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x4xi32>
// CHECK: tosa.add {{.*}} : (tensor<2x4xi32>, tensor<1x4xi32>) -> tensor<2x4xi32>
// CHECK: arith.trunci %{{.*}} : i64 to i8
func.func @matmul(%a: tensor<2x3xui8>, %b: tensor<4x3xui8>, %c: tensor<4xi32>) -> tensor<2x4xui8> {
  %0 = "nn.quantized_matmul"(%a, %b, %c) {a_zero_point = 1 : i64, b_zero_point = 2 : i64, multiplier = 0.001 : f64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3xui8>, tensor<4x3xui8>, tensor<4xi32>) -> tensor<2x4xui8>
  return %0 : tensor<2x4xui8>
}

// -----

// Window sums in i32 over the zero-padded input, divided by the count of non-padding elements
// with (sum + count / 2) / count.
// CHECK-LABEL: func.func @avg
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: tosa.pad {{.*}} -> tensor<1x6x6x1xi32>
// CHECK: linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK: tosa.const values(dense<{{\[\[\[\[}}4], [6]], {{\[\[}}6], [9]]]]> : tensor<1x2x2x1xi32>)
// CHECK: arith.divsi
func.func @avg(%x: tensor<1x4x4x1xui8>) -> tensor<1x2x2x1xui8> {
  %0 = "nn.quantized_average_pool2d"(%x) {window_dimensions = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x1xui8>) -> tensor<1x2x2x1xui8>
  return %0 : tensor<1x2x2x1xui8>
}

// -----

// CHECK-LABEL: func.func @softmax
// CHECK: tosa.reduce_max %{{.*}} axis(1) : (tensor<2x5xi32>) -> tensor<2x1xi32>
// CHECK: tosa.sub
// CHECK: tosa.const values({{.*}}) : () -> tensor<256xi32>
// CHECK: tensor.extract
// CHECK: tosa.reduce_sum %{{.*}} axis(1)
// CHECK: arith.divsi
func.func @softmax(%x: tensor<2x5xui8>) -> tensor<2x5xui8> {
  %0 = "nn.quantized_softmax"(%x) {scale = 0.1 : f64} : (tensor<2x5xui8>) -> tensor<2x5xui8>
  return %0 : tensor<2x5xui8>
}

// -----

// CHECK-LABEL: func.func @dequantize
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.subi
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: arith.mulf
func.func @dequantize(%x: tensor<3xui8>) -> tensor<3xf32> {
  %0 = "nn.dequantize"(%x) {scale = 0.5 : f64, zero_point = 128 : i64} : (tensor<3xui8>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @requantize
// CHECK: arith.extui %{{.*}} : i8 to i64
// CHECK: arith.subi
// CHECK: arith.trunci %{{.*}} : i64 to i32
func.func @requantize(%x: tensor<3xui8>) -> tensor<3xi32> {
  %0 = "nn.requantize"(%x) {input_zero_point = 128 : i64, multiplier = 1.0 : f64, to = "int32", output_min = -128 : i64, output_max = 127 : i64} : (tensor<3xui8>) -> tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

// CHECK-LABEL: func.func @table
// CHECK: arith.index_cast
// CHECK: tensor.extract
func.func @table(%x: tensor<3xui8>, %t: tensor<256xui8>) -> tensor<3xui8> {
  %0 = "nn.table_lookup"(%x, %t) : (tensor<3xui8>, tensor<256xui8>) -> tensor<3xui8>
  return %0 : tensor<3xui8>
}
