// RUN: estuary-opt %s --split-input-file --nn-stack-step-products | FileCheck %s

// Two steps of %x, each times the same constant matrix: one product of all of %x's rows, sliced
// back per step (the step's row block).
// CHECK-LABEL: func.func @steps
// CHECK: %[[F:.*]] = "nn.reshape"(%arg0) {new_shape = array<i64: 6, 3>} : (tensor<3x2x3xf32>) -> tensor<6x3xf32>
// CHECK: %[[P:.*]] = "nn.matmul"(%[[F]], %{{.*}}) : (tensor<6x3xf32>, tensor<3x4xf32>) -> tensor<6x4xf32>
// CHECK: "nn.slice"(%[[P]]) {sizes = array<i64: 2, 4>, starts = array<i64: 0, 0>}
// CHECK: "nn.slice"(%[[P]]) {sizes = array<i64: 2, 4>, starts = array<i64: 4, 0>}
// CHECK-NOT: nn.matmul
func.func @steps(%x: tensor<3x2x3xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %w = "nn.constant"() {value = dense<1.0> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
  %s0 = "nn.slice"(%x) {starts = array<i64: 0, 0, 0>, sizes = array<i64: 1, 2, 3>} : (tensor<3x2x3xf32>) -> tensor<1x2x3xf32>
  %a0 = "nn.reshape"(%s0) {new_shape = array<i64: 2, 3>} : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  %p0 = "nn.matmul"(%a0, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %s2 = "nn.slice"(%x) {starts = array<i64: 2, 0, 0>, sizes = array<i64: 1, 2, 3>} : (tensor<3x2x3xf32>) -> tensor<1x2x3xf32>
  %a2 = "nn.reshape"(%s2) {new_shape = array<i64: 2, 3>} : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  %p2 = "nn.matmul"(%a2, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %p0, %p2 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// gemm (Core ML's form: transposed B, a bias row) keeps its attributes and C.
// CHECK-LABEL: func.func @gemm_steps
// CHECK: %[[G:.*]] = "nn.gemm"(%{{.*}}, %{{.*}}, %{{.*}}) {a_transpose = false, alpha = 5.000000e-01 : f64, b_transpose = true, {{.*}} : (tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: "nn.slice"(%[[G]]) {sizes = array<i64: 1, 4>, starts = array<i64: 0, 0>}
// CHECK: "nn.slice"(%[[G]]) {sizes = array<i64: 1, 4>, starts = array<i64: 1, 0>}
func.func @gemm_steps(%x: tensor<2x1x3xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>) {
  %w = "nn.constant"() {value = dense<1.0> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
  %c = "nn.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %s0 = "nn.slice"(%x) {starts = array<i64: 0, 0, 0>, sizes = array<i64: 1, 1, 3>} : (tensor<2x1x3xf32>) -> tensor<1x1x3xf32>
  %a0 = "nn.reshape"(%s0) {new_shape = array<i64: 1, 3>} : (tensor<1x1x3xf32>) -> tensor<1x3xf32>
  %g0 = "nn.gemm"(%a0, %w, %c) {b_transpose = true, alpha = 0.5 : f32, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  %s1 = "nn.slice"(%x) {starts = array<i64: 1, 0, 0>, sizes = array<i64: 1, 1, 3>} : (tensor<2x1x3xf32>) -> tensor<1x1x3xf32>
  %a1 = "nn.reshape"(%s1) {new_shape = array<i64: 1, 3>} : (tensor<1x1x3xf32>) -> tensor<1x3xf32>
  %g1 = "nn.gemm"(%a1, %w, %c) {b_transpose = true, alpha = 0.5 : f32, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<1x3xf32>, tensor<4x3xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  return %g0, %g1 : tensor<1x4xf32>, tensor<1x4xf32>
}

// -----

// Kept: a matrix computed at run time, slices that are not whole steps, and a C that varies
// along the rows.
// CHECK-LABEL: func.func @keep
// CHECK-COUNT-4: "nn.matmul"
// CHECK-COUNT-2: "nn.gemm"
// CHECK-NOT: "nn.reshape"(%arg0)
func.func @keep(%x: tensor<2x2x3xf32>, %v: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %w = "nn.constant"() {value = dense<1.0> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
  %w2 = "nn.constant"() {value = dense<2.0> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
  %c = "nn.constant"() {value = dense<[[1.0], [2.0]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
  %s0 = "nn.slice"(%x) {starts = array<i64: 0, 0, 0>, sizes = array<i64: 1, 2, 3>} : (tensor<2x2x3xf32>) -> tensor<1x2x3xf32>
  %a0 = "nn.reshape"(%s0) {new_shape = array<i64: 2, 3>} : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  %s1 = "nn.slice"(%x) {starts = array<i64: 1, 0, 0>, sizes = array<i64: 1, 2, 3>} : (tensor<2x2x3xf32>) -> tensor<1x2x3xf32>
  %a1 = "nn.reshape"(%s1) {new_shape = array<i64: 2, 3>} : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
  %h0 = "nn.slice"(%x) {starts = array<i64: 0, 0, 0>, sizes = array<i64: 1, 1, 3>} : (tensor<2x2x3xf32>) -> tensor<1x1x3xf32>
  %b0 = "nn.reshape"(%h0) {new_shape = array<i64: 1, 3>} : (tensor<1x1x3xf32>) -> tensor<1x3xf32>
  %h1 = "nn.slice"(%x) {starts = array<i64: 1, 1, 0>, sizes = array<i64: 1, 1, 3>} : (tensor<2x2x3xf32>) -> tensor<1x1x3xf32>
  %b1 = "nn.reshape"(%h1) {new_shape = array<i64: 1, 3>} : (tensor<1x1x3xf32>) -> tensor<1x3xf32>
  %p0 = "nn.matmul"(%a0, %v) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %p1 = "nn.matmul"(%a1, %v) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %q0 = "nn.matmul"(%b0, %w) : (tensor<1x3xf32>, tensor<3x4xf32>) -> tensor<1x4xf32>
  %q1 = "nn.matmul"(%b1, %w) : (tensor<1x3xf32>, tensor<3x4xf32>) -> tensor<1x4xf32>
  %g0 = "nn.gemm"(%a0, %w2, %c) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %g1 = "nn.gemm"(%a1, %w2, %c) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %p0, %p1, %q0, %q1, %g0, %g1 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
