// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// CHECK-LABEL: func.func @sum_keep
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
// CHECK: tosa.reshape {{.*}} -> tensor<2x1xf32>
func.func @sum_keep(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %0 = "nn.reduce_sum"(%x) {axes = array<i64: 1>, keep_dimensions = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// Unsigned maxima compare unsigned.
// CHECK-LABEL: func.func @max_u32
// CHECK: arith.maxui
func.func @max_u32(%x: tensor<2x3xui32>) -> tensor<2xui32> {
  %0 = "nn.reduce_max"(%x) {axes = array<i64: 1>} : (tensor<2x3xui32>) -> tensor<2xui32>
  return %0 : tensor<2xui32>
}

// -----

// log_sum_exp subtracts the maximum before exponentiating.
// CHECK-LABEL: func.func @lse
// CHECK: arith.maximumf
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: math.log
func.func @lse(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "nn.reduce_log_sum_exp"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// float16 accumulates in float32.
// CHECK-LABEL: func.func @mean_f16
// CHECK: arith.extf
// CHECK: arith.divf
// CHECK: arith.truncf
func.func @mean_f16(%x: tensor<4xf16>) -> tensor<f16> {
  %0 = "nn.reduce_mean"(%x) : (tensor<4xf16>) -> tensor<f16>
  return %0 : tensor<f16>
}

// -----

// Empty axes: the element function alone (no reduction).
// CHECK-LABEL: func.func @l1_empty
// CHECK-NOT: "reduction"
// CHECK: math.absf
func.func @l1_empty(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.reduce_l1"(%x) {axes = array<i64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @argmax
// CHECK: linalg.generic
// CHECK: linalg.index 1
// CHECK: arith.cmpf ogt
// CHECK: arith.trunci
func.func @argmax(%x: tensor<2x3xf32>) -> tensor<2xi32> {
  %0 = "nn.arg_max"(%x) {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// The remaining reductions, each replaced by a linalg reduction (plus its post-function).
// CHECK-LABEL: func.func @rest
// CHECK-DAG: arith.minimumf
// CHECK-DAG: arith.mulf
// CHECK-DAG: math.sqrt
// CHECK-DAG: math.log
// CHECK-DAG: arith.cmpf olt
// CHECK-NOT: "nn.
func.func @rest(%x: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi64>) {
  %0 = "nn.reduce_min"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %1 = "nn.reduce_product"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %2 = "nn.reduce_l2"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %3 = "nn.reduce_log_sum"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %4 = "nn.reduce_sum_square"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %5 = "nn.arg_min"(%x) {axis = 1 : i64, output_data_type = "int64"} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xi64>
}
