// RUN: estuary-opt %s --split-input-file --nn-merge-sibling-matmuls | FileCheck %s

// Two products of %x with constant matrices become one product with the weights side by side,
// sliced back along the last axis.
// CHECK-LABEL: func.func @matmuls
// CHECK: "nn.constant"() {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00, 7.000000e+00], [3.000000e+00, 4.000000e+00, 8.000000e+00], [5.000000e+00, 6.000000e+00, 9.000000e+00]]> : tensor<3x3xf32>}
// CHECK: %[[P:.*]] = "nn.matmul"(%arg0, %{{.*}}) : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
// CHECK: "nn.slice"(%[[P]]) {sizes = array<i64: 2, 2>, starts = array<i64: 0, 0>}
// CHECK: "nn.slice"(%[[P]]) {sizes = array<i64: 2, 1>, starts = array<i64: 0, 2>}
// CHECK-NOT: nn.matmul
func.func @matmuls(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x1xf32>) {
  %w1 = "nn.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %w2 = "nn.constant"() {value = dense<[[7.0], [8.0], [9.0]]> : tensor<3x1xf32>} : () -> tensor<3x1xf32>
  %q = "nn.matmul"(%x, %w1) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %k = "nn.matmul"(%x, %w2) : (tensor<2x3xf32>, tensor<3x1xf32>) -> tensor<2x1xf32>
  return %q, %k : tensor<2x2xf32>, tensor<2x1xf32>
}

// -----

// gemm with the same alpha/beta: transposed B become columns, the row-vector C (a vector and a
// scalar here) are joined into one row.
// CHECK-LABEL: func.func @gemms
// CHECK-DAG: dense<{{\[\[}}1.000000e+00, 4.000000e+00, 7.000000e+00], [2.000000e+00, 5.000000e+00, 8.000000e+00], [3.000000e+00, 6.000000e+00, 9.000000e+00]]> : tensor<3x3xf32>
// CHECK-DAG: dense<[5.000000e-01, 1.500000e+00, 2.500000e+00]> : tensor<3xf32>
// CHECK: %[[G:.*]] = "nn.gemm"(%arg0, {{.*}}) {a_transpose = false, alpha = 2.000000e+00 : f64, b_transpose = false
// CHECK: "nn.slice"(%[[G]]) {sizes = array<i64: 2, 2>, starts = array<i64: 0, 0>}
// CHECK: "nn.slice"(%[[G]]) {sizes = array<i64: 2, 1>, starts = array<i64: 0, 2>}
// CHECK-NOT: nn.gemm
func.func @gemms(%x: tensor<2x3xf32>) -> (tensor<2x2xf32>, tensor<2x1xf32>) {
  %w1 = "nn.constant"() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %w2 = "nn.constant"() {value = dense<[[7.0, 8.0, 9.0]]> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
  %c1 = "nn.constant"() {value = dense<[0.5, 1.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c2 = "nn.constant"() {value = dense<2.5> : tensor<f32>} : () -> tensor<f32>
  %a = "nn.gemm"(%x, %w1, %c1) {b_transpose = true, alpha = 2.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %b = "nn.gemm"(%x, %w2, %c2) {b_transpose = true, alpha = 2.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<f32>) -> tensor<2x1xf32>
  return %a, %b : tensor<2x2xf32>, tensor<2x1xf32>
}

// -----

// Not merged: a weight computed at run time, a different alpha, a C that varies along the rows.
// CHECK-LABEL: func.func @keep
// CHECK-COUNT-2: nn.matmul
// CHECK-COUNT-3: nn.gemm
// CHECK-NOT: nn.slice
func.func @keep(%x: tensor<2x3xf32>, %w: tensor<3x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %w1 = "nn.constant"() {value = dense<1.0> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %c = "nn.constant"() {value = dense<[[1.0], [2.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %p = "nn.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %q = "nn.matmul"(%x, %w1) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %a = "nn.gemm"(%x, %w1) {alpha = 2.0 : f32, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %b = "nn.gemm"(%x, %w1) {alpha = 3.0 : f32, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  %d = "nn.gemm"(%x, %w1, %c) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  return %p, %q, %a, %b, %d : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// Two values each multiplied by the same two matrices (an unrolled recurrence): one joined constant
// serves both merged products.
// CHECK-LABEL: func.func @shared
// CHECK-COUNT-1: "nn.constant"() {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>}
// CHECK-NOT: "nn.constant"
// CHECK-COUNT-2: "nn.matmul"
func.func @shared(%x: tensor<2x2xf32>, %y: tensor<2x2xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>) {
  %w1 = "nn.constant"() {value = dense<[[1.0], [3.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %w2 = "nn.constant"() {value = dense<[[2.0], [4.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %a = "nn.matmul"(%x, %w1) : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %b = "nn.matmul"(%x, %w2) : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %c = "nn.matmul"(%y, %w1) : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %d = "nn.matmul"(%y, %w2) : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  return %a, %b, %c, %d : tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x1xf32>
}

// -----

// One-row products (a vector times matrices) stay apart when the merged matrix is too small for
// the vector form of the lowering (K < 16)...
// CHECK-LABEL: func.func @vector
// CHECK-COUNT-2: "nn.matmul"
// CHECK-NOT: nn.slice
func.func @vector(%x: tensor<1x2xf32>) -> (tensor<1x1xf32>, tensor<1x1xf32>) {
  %w1 = "nn.constant"() {value = dense<[[1.0], [3.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %w2 = "nn.constant"() {value = dense<[[2.0], [4.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %a = "nn.matmul"(%x, %w1) : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
  %b = "nn.matmul"(%x, %w2) : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
  return %a, %b : tensor<1x1xf32>, tensor<1x1xf32>
}

// -----

// ... and merge when it takes the vector form (K = 16, 16 x 4 elements).
// CHECK-LABEL: func.func @vector_merged
// CHECK: "nn.constant"() {value = dense<1.000000e+00> : tensor<16x4xf32>}
// CHECK: %[[P:.*]] = "nn.matmul"(%arg0, %{{.*}}) : (tensor<1x16xf32>, tensor<16x4xf32>) -> tensor<1x4xf32>
// CHECK: "nn.slice"(%[[P]]) {sizes = array<i64: 1, 2>, starts = array<i64: 0, 0>}
// CHECK: "nn.slice"(%[[P]]) {sizes = array<i64: 1, 2>, starts = array<i64: 0, 2>}
// CHECK-NOT: nn.matmul
func.func @vector_merged(%x: tensor<1x16xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>) {
  %w1 = "nn.constant"() {value = dense<1.0> : tensor<16x2xf32>} : () -> tensor<16x2xf32>
  %w2 = "nn.constant"() {value = dense<1.0> : tensor<16x2xf32>} : () -> tensor<16x2xf32>
  %a = "nn.matmul"(%x, %w1) : (tensor<1x16xf32>, tensor<16x2xf32>) -> tensor<1x2xf32>
  %b = "nn.matmul"(%x, %w2) : (tensor<1x16xf32>, tensor<16x2xf32>) -> tensor<1x2xf32>
  return %a, %b : tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

// With 16 rows or more the merged product is computed transposed ([W1 W2]^T x^T, 3 x 16), and each
// result is the transpose of a block of its rows.
// CHECK-LABEL: func.func @column_form
// CHECK: %[[W:.*]] = "nn.constant"() {value = dense<{{\[\[}}1.000000e+00, 3.000000e+00, 5.000000e+00], [2.000000e+00, 4.000000e+00, 6.000000e+00], [7.000000e+00, 8.000000e+00, 9.000000e+00]]> : tensor<3x3xf32>}
// CHECK: %[[XT:.*]] = "nn.transpose"(%arg0) {permutation = array<i64: 1, 0>} : (tensor<16x3xf32>) -> tensor<3x16xf32>
// CHECK: %[[P:.*]] = "nn.matmul"(%[[W]], %[[XT]]) : (tensor<3x3xf32>, tensor<3x16xf32>) -> tensor<3x16xf32>
// CHECK: %[[S1:.*]] = "nn.slice"(%[[P]]) {sizes = array<i64: 2, 16>, starts = array<i64: 0, 0>}
// CHECK: "nn.transpose"(%[[S1]]) {permutation = array<i64: 1, 0>} : (tensor<2x16xf32>) -> tensor<16x2xf32>
// CHECK: %[[S2:.*]] = "nn.slice"(%[[P]]) {sizes = array<i64: 1, 16>, starts = array<i64: 2, 0>}
// CHECK: "nn.transpose"(%[[S2]]) {permutation = array<i64: 1, 0>} : (tensor<1x16xf32>) -> tensor<16x1xf32>
func.func @column_form(%x: tensor<16x3xf32>) -> (tensor<16x2xf32>, tensor<16x1xf32>) {
  %w1 = "nn.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %w2 = "nn.constant"() {value = dense<[[7.0], [8.0], [9.0]]> : tensor<3x1xf32>} : () -> tensor<3x1xf32>
  %q = "nn.matmul"(%x, %w1) : (tensor<16x3xf32>, tensor<3x2xf32>) -> tensor<16x2xf32>
  %k = "nn.matmul"(%x, %w2) : (tensor<16x3xf32>, tensor<3x1xf32>) -> tensor<16x1xf32>
  return %q, %k : tensor<16x2xf32>, tensor<16x1xf32>
}

// -----

// gemm in the column form: the row-vector C becomes a column, x is read through b_transpose.
// CHECK-LABEL: func.func @column_form_gemm
// CHECK: dense<{{\[\[}}5.000000e-01], [1.500000e+00], [2.500000e+00]]> : tensor<3x1xf32>
// CHECK: %[[G:.*]] = "nn.gemm"(%{{.*}}, %arg0, %{{.*}}) {a_transpose = false, alpha = 2.000000e+00 : f64, b_transpose = true
// CHECK-SAME: (tensor<3x3xf32>, tensor<16x3xf32>, tensor<3x1xf32>) -> tensor<3x16xf32>
// CHECK: "nn.slice"(%[[G]]) {sizes = array<i64: 2, 16>, starts = array<i64: 0, 0>}
// CHECK: "nn.slice"(%[[G]]) {sizes = array<i64: 1, 16>, starts = array<i64: 2, 0>}
func.func @column_form_gemm(%x: tensor<16x3xf32>) -> (tensor<16x2xf32>, tensor<16x1xf32>) {
  %w1 = "nn.constant"() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %w2 = "nn.constant"() {value = dense<[[7.0, 8.0, 9.0]]> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
  %c1 = "nn.constant"() {value = dense<[0.5, 1.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c2 = "nn.constant"() {value = dense<2.5> : tensor<f32>} : () -> tensor<f32>
  %a = "nn.gemm"(%x, %w1, %c1) {b_transpose = true, alpha = 2.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<16x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<16x2xf32>
  %b = "nn.gemm"(%x, %w2, %c2) {b_transpose = true, alpha = 2.0 : f32, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<16x3xf32>, tensor<1x3xf32>, tensor<f32>) -> tensor<16x1xf32>
  return %a, %b : tensor<16x2xf32>, tensor<16x1xf32>
}

// -----

// A result read a row at a time (the per-step input products of an unrolled recurrence) keeps the
// row form: in the column form each of its rows would be a strided column.
// CHECK-LABEL: func.func @row_sliced
// CHECK-NOT: nn.transpose
// CHECK: "nn.matmul"(%arg0, %{{.*}}) : (tensor<16x3xf32>, tensor<3x3xf32>) -> tensor<16x3xf32>
// CHECK-NOT: nn.transpose
func.func @row_sliced(%x: tensor<16x3xf32>) -> (tensor<1x2xf32>, tensor<16x1xf32>) {
  %w1 = "nn.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %w2 = "nn.constant"() {value = dense<[[7.0], [8.0], [9.0]]> : tensor<3x1xf32>} : () -> tensor<3x1xf32>
  %q = "nn.matmul"(%x, %w1) : (tensor<16x3xf32>, tensor<3x2xf32>) -> tensor<16x2xf32>
  %k = "nn.matmul"(%x, %w2) : (tensor<16x3xf32>, tensor<3x1xf32>) -> tensor<16x1xf32>
  %r = "nn.slice"(%q) {starts = array<i64: 3, 0>, sizes = array<i64: 1, 2>} : (tensor<16x2xf32>) -> tensor<1x2xf32>
  return %r, %k : tensor<1x2xf32>, tensor<16x1xf32>
}
