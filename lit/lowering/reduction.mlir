// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// Float sums are tosa.reduce_sum; keeping the dimension needs no reshape.
// CHECK-LABEL: func.func @sum_keep
// CHECK-NOT: tosa.reshape
// CHECK: tosa.reduce_sum %{{.*}} axis(1) : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NOT: tosa.reshape
func.func @sum_keep(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %0 = "nn.reduce_sum"(%x) {axes = array<i64: 1>, keep_dimensions = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// Adjacent axes are merged into one reduction; mean multiplies by 1/count.
// CHECK-LABEL: func.func @mean_adjacent
// CHECK: tosa.reshape %{{.*}} -> tensor<2x12x5xf32>
// CHECK: tosa.reduce_sum %{{.*}} axis(1) : (tensor<2x12x5xf32>) -> tensor<2x1x5xf32>
// CHECK-NOT: tosa.reduce_sum
// CHECK: tosa.const values(dense<0.0833333358> : tensor<1x1x1x1xf32>)
// CHECK: tosa.mul
// CHECK: tosa.reshape %{{.*}} -> tensor<2x5xf32>
func.func @mean_adjacent(%x: tensor<2x3x4x5xf32>) -> tensor<2x5xf32> {
  %0 = "nn.reduce_mean"(%x) {axes = array<i64: 2, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// A sum over the spatial axes of NHWC with a multiple of 16 channels (global pooling written as a
// reduction) is a pooling op over the whole image, so IREE does not fuse it into the producer.
// CHECK-LABEL: func.func @mean_spatial
// CHECK-NOT: tosa.reduce_sum
// CHECK: linalg.pooling_nhwc_sum {{.*}} ins(%arg0, %{{.*}} : tensor<1x7x7x32xf32>, tensor<7x7xf32>) outs(%{{.*}} : tensor<1x1x1x32xf32>)
// CHECK: tosa.const values(dense<0.0204081628> : tensor<1x1x1x1xf32>)
// CHECK: tosa.mul
func.func @mean_spatial(%x: tensor<1x7x7x32xf32>) -> tensor<1x1x1x32xf32> {
  %0 = "nn.reduce_mean"(%x) {axes = array<i64: 1, 2>, keep_dimensions = true} : (tensor<1x7x7x32xf32>) -> tensor<1x1x1x32xf32>
  return %0 : tensor<1x1x1x32xf32>
}

// -----

// Other channel counts keep tosa.reduce_sum.
// CHECK-LABEL: func.func @mean_spatial_narrow
// CHECK-NOT: linalg.pooling_nhwc_sum
// CHECK: tosa.reduce_sum
func.func @mean_spatial_narrow(%x: tensor<1x7x7x3xf32>) -> tensor<1x1x1x3xf32> {
  %0 = "nn.reduce_mean"(%x) {axes = array<i64: 1, 2>, keep_dimensions = true} : (tensor<1x7x7x3xf32>) -> tensor<1x1x1x3xf32>
  return %0 : tensor<1x1x1x3xf32>
}

// -----

// Separate runs of axes: one reduction each.
// CHECK-LABEL: func.func @product_all_but_one
// CHECK: tosa.reshape %{{.*}} -> tensor<2x3x20xf32>
// CHECK: tosa.reduce_product %{{.*}} axis(0)
// CHECK: tosa.reduce_product %{{.*}} axis(2) : (tensor<1x3x20xf32>) -> tensor<1x3x1xf32>
// CHECK: tosa.reshape %{{.*}} -> tensor<3xf32>
func.func @product_all_but_one(%x: tensor<2x3x4x5xf32>) -> tensor<3xf32> {
  %0 = "nn.reduce_product"(%x) {axes = array<i64: 0, 2, 3>} : (tensor<2x3x4x5xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Float max/min are linalg reductions from -inf/+inf (IREE's tosa.reduce_max starts at -FLT_MAX).
// CHECK-LABEL: func.func @max_f32
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK-LABEL: func.func @min_f16
// CHECK: arith.constant 0x7C00 : f16
// CHECK: arith.minimumf
func.func @max_f32(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "nn.reduce_max"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func @min_f16(%x: tensor<2x3xf16>) -> tensor<f16> {
  %0 = "nn.reduce_min"(%x) : (tensor<2x3xf16>) -> tensor<f16>
  return %0 : tensor<f16>
}

// -----

// Unsigned maxima compare unsigned.
// CHECK-LABEL: func.func @max_u32
// CHECK: arith.constant 0 : i32
// CHECK: arith.maxui
func.func @max_u32(%x: tensor<2x3xui32>) -> tensor<2xui32> {
  %0 = "nn.reduce_max"(%x) {axes = array<i64: 1>} : (tensor<2x3xui32>) -> tensor<2xui32>
  return %0 : tensor<2xui32>
}

// -----

// Integer sums wrap in their own width: linalg, not TOSA.
// CHECK-LABEL: func.func @int_sums
// CHECK: math.absi %{{.*}} : i64
// CHECK: arith.addi %{{.*}} : i64
// CHECK: arith.muli %{{.*}} : i32
// CHECK: arith.addi %{{.*}} : i32
// CHECK: arith.muli %{{.*}} : i32
// CHECK-NOT: tosa.reduce
func.func @int_sums(%x: tensor<2x3xi64>, %y: tensor<2x3xui32>) -> (tensor<2xi64>, tensor<2xui32>, tensor<ui32>) {
  %0 = "nn.reduce_l1"(%x) {axes = array<i64: 1>} : (tensor<2x3xi64>) -> tensor<2xi64>
  %1 = "nn.reduce_sum_square"(%y) {axes = array<i64: 1>} : (tensor<2x3xui32>) -> tensor<2xui32>
  %2 = "nn.reduce_product"(%y) : (tensor<2x3xui32>) -> tensor<ui32>
  return %0, %1, %2 : tensor<2xi64>, tensor<2xui32>, tensor<ui32>
}

// -----

// log_sum_exp: the maximum (0 where it is not finite) is subtracted before exponentiating.
// CHECK-LABEL: func.func @lse
// CHECK: arith.maximumf
// CHECK: math.absf
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK: tosa.sub
// CHECK: tosa.exp
// CHECK: tosa.reduce_sum
// CHECK: tosa.log
// CHECK: tosa.add
func.func @lse(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "nn.reduce_log_sum_exp"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// float16 sums accumulate in float32.
// CHECK-LABEL: func.func @mean_f16
// CHECK: tosa.cast %{{.*}} : (tensor<4xf16>) -> tensor<4xf32>
// CHECK: tosa.reduce_sum
// CHECK: tosa.mul
// CHECK: tosa.cast %{{.*}} -> tensor<1xf16>
func.func @mean_f16(%x: tensor<4xf16>) -> tensor<f16> {
  %0 = "nn.reduce_mean"(%x) : (tensor<4xf16>) -> tensor<f16>
  return %0 : tensor<f16>
}

// -----

// l1/l2/sum_square/log_sum: the element function, then the sum (sqrt, log after it).
// CHECK-LABEL: func.func @norms
// CHECK: tosa.abs
// CHECK: tosa.reduce_sum
// CHECK: tosa.mul
// CHECK: tosa.reduce_sum
// CHECK: math.sqrt
// CHECK: tosa.reduce_sum
// CHECK: tosa.log
func.func @norms(%x: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %0 = "nn.reduce_l1"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %1 = "nn.reduce_l2"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  %2 = "nn.reduce_log_sum"(%x) {axes = array<i64: 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0, %1, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}

// -----

// Empty axes, and a scalar with axes absent: the element function alone, no reduction.
// CHECK-LABEL: func.func @each_value
// CHECK-NOT: linalg.generic
// CHECK-NOT: tosa.reduce
// CHECK: tosa.abs %{{.*}} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: tosa.mul %{{.*}} : (tensor<f32>, tensor<f32>, tensor<1xi8>) -> tensor<f32>
// CHECK: return %{{.*}}, %{{.*}}, %arg0 :
func.func @each_value(%x: tensor<4xf32>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<f32>, tensor<4xf32>) {
  %0 = "nn.reduce_l2"(%x) {axes = array<i64>, keep_dimensions = true} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "nn.reduce_sum_square"(%s) : (tensor<f32>) -> tensor<f32>
  %2 = "nn.reduce_sum"(%x) {axes = array<i64>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<f32>, tensor<4xf32>
}

// -----

// Float arg_max is tosa.argmax (first index on ties, first NaN); an int64 result is extended.
// CHECK-LABEL: func.func @argmax
// CHECK: tosa.argmax %{{.*}} axis(1) : (tensor<2x3xf32>) -> tensor<2xi32>
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: tosa.reshape %{{.*}} -> tensor<2x1xi64>
func.func @argmax(%x: tensor<2x3xf32>) -> tensor<2x1xi64> {
  %0 = "nn.arg_max"(%x) {axis = 1 : i64, keep_dimensions = true, output_data_type = "int64"} : (tensor<2x3xf32>) -> tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// -----

// arg_min (any type) and integer arg_max: a (value, index) linalg reduction; only a strictly
// better value (or the first NaN) replaces the running one.
// CHECK-LABEL: func.func @arg_generic
// CHECK: linalg.index 0
// CHECK: arith.cmpf ult
// CHECK: arith.cmpf ord
// CHECK: arith.andi
// CHECK: linalg.index 1
// CHECK: arith.cmpi sgt
// CHECK: linalg.index 1
// CHECK: arith.cmpi ult
// CHECK-NOT: "nn.
func.func @arg_generic(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>, %u: tensor<2x3xui8>) -> (tensor<3xi32>, tensor<2xi64>, tensor<2xi32>) {
  %0 = "nn.arg_min"(%x) {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<3xi32>
  %1 = "nn.arg_max"(%i) {axis = 1 : i64, output_data_type = "int64"} : (tensor<2x3xi32>) -> tensor<2xi64>
  %2 = "nn.arg_min"(%u) {axis = 1 : i64} : (tensor<2x3xui8>) -> tensor<2xi32>
  return %0, %1, %2 : tensor<3xi32>, tensor<2xi64>, tensor<2xi32>
}
