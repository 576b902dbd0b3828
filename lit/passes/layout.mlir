// RUN: estuary-opt %s --split-input-file --nn-layout-nhwc --nn-canonicalize-transposes | FileCheck %s

// conv -> relu -> max pool -> add (residual with a per-channel constant) all run in NHWC: one
// transpose in, one out; the constant is permuted at compile time.
// CHECK-LABEL: func.func @chain
// CHECK: %[[T:.*]] = "nn.transpose"(%arg0) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK: %[[C:.*]] = "nn.conv2d"(%[[T]], {{.*}}input_layout = "nhwc"{{.*}} -> tensor<1x4x4x2xf32>
// CHECK: %[[R:.*]] = "nn.relu"(%[[C]]) : (tensor<1x4x4x2xf32>)
// CHECK: %[[P:.*]] = "nn.max_pool2d"(%[[R]]) {{.*}}layout = "nhwc"{{.*}} -> tensor<1x2x2x2xf32>
// CHECK: dense<{{\[\[\[}}[1.000000e+00, 2.000000e+00]]]]> : tensor<1x1x1x2xf32>
// CHECK: %[[A:.*]] = "nn.add"(%[[P]], %{{.*}}) : (tensor<1x2x2x2xf32>, tensor<1x1x1x2xf32>)
// CHECK: %[[O:.*]] = "nn.transpose"(%[[A]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: nn.transpose
// CHECK: return %[[O]]
func.func @chain(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<2x3x1x1xf32>} : () -> tensor<2x3x1x1xf32>
  %k = "nn.constant"() {value = dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %c = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  %r = "nn.relu"(%c) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = "nn.max_pool2d"(%r) {window_dimensions = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %a = "nn.add"(%p, %k) : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  return %a : tensor<1x2x2x2xf32>
}

// -----

// Consecutive transposes compose (here to the identity), reshapes merge, an identity reshape
// disappears, and a transpose that only moves unit dimensions becomes a reshape.
// CHECK-LABEL: func.func @shapes
// CHECK-NOT: nn.transpose
// CHECK: %[[R:.*]] = "nn.reshape"(%arg0) {new_shape = array<i64: 6>}
// CHECK-NEXT: %[[U:.*]] = "nn.reshape"(%arg1) {new_shape = array<i64: 1, 5, 1>}
// CHECK: return %[[R]], %[[U]]
func.func @shapes(%x: tensor<2x3xf32>, %y: tensor<5x1x1xf32>) -> (tensor<6xf32>, tensor<1x5x1xf32>) {
  %t1 = "nn.transpose"(%x) {permutation = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %t2 = "nn.transpose"(%t1) {permutation = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %r1 = "nn.reshape"(%t2) {new_shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %r2 = "nn.reshape"(%r1) {new_shape = array<i64: 6>} : (tensor<3x2xf32>) -> tensor<6xf32>
  %r3 = "nn.reshape"(%r2) {new_shape = array<i64: 6>} : (tensor<6xf32>) -> tensor<6xf32>
  %u = "nn.transpose"(%y) {permutation = array<i64: 1, 0, 2>} : (tensor<5x1x1xf32>) -> tensor<1x5x1xf32>
  return %r3, %u : tensor<6xf32>, tensor<1x5x1xf32>
}

// -----

// Transposes with different permutations do not sink through a binary op.
// CHECK-LABEL: func.func @mixed
// CHECK-COUNT-2: nn.transpose
// CHECK: nn.add
func.func @mixed(%x: tensor<2x3x4xf32>, %y: tensor<4x3x2xf32>) -> tensor<3x2x4xf32> {
  %a = "nn.transpose"(%x) {permutation = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = "nn.transpose"(%y) {permutation = array<i64: 1, 2, 0>} : (tensor<4x3x2xf32>) -> tensor<3x2x4xf32>
  %s = "nn.add"(%a, %b) : (tensor<3x2x4xf32>, tensor<3x2x4xf32>) -> tensor<3x2x4xf32>
  return %s : tensor<3x2x4xf32>
}

// -----

// An explicit pad between NHWC layers (Core ML pools pad this way) runs in NHWC too: the
// paddings follow their axes and the transposes around it cancel.
// CHECK-LABEL: func.func @padded_pool
// CHECK: %[[C:.*]] = "nn.conv2d"({{.*}}input_layout = "nhwc"
// CHECK: %[[P:.*]] = "nn.pad"(%[[C]]) {beginning_padding = array<i64: 0, 1, 2, 0>, ending_padding = array<i64: 0, 3, 4, 0>{{.*}} -> tensor<1x8x10x2xf32>
// CHECK: %[[M:.*]] = "nn.max_pool2d"(%[[P]]) {{.*}}layout = "nhwc"
// CHECK: %[[O:.*]] = "nn.transpose"(%[[M]]) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: nn.transpose
// CHECK: return %[[O]]
func.func @padded_pool(%x: tensor<1x3x4x4xf32>) -> tensor<1x2x7x9xf32> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<2x3x1x1xf32>} : () -> tensor<2x3x1x1xf32>
  %c = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x4x4xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x4x4xf32>
  %p = "nn.pad"(%c) {beginning_padding = array<i64: 0, 0, 1, 2>, ending_padding = array<i64: 0, 0, 3, 4>, mode = "constant", value = -1.0e+30 : f64} : (tensor<1x2x4x4xf32>) -> tensor<1x2x8x10xf32>
  %m = "nn.max_pool2d"(%p) {window_dimensions = array<i64: 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x2x8x10xf32>) -> tensor<1x2x7x9xf32>
  return %m : tensor<1x2x7x9xf32>
}

// -----

// Reductions read through a transpose: the axes are mapped back, kept unit axes turn the
// transpose into a reshape, and dropped axes leave a transpose of what remains.
// CHECK-LABEL: func.func @reductions
// CHECK-NOT: nn.transpose
// CHECK: %[[S:.*]] = "nn.reduce_mean"(%arg0) {axes = array<i64: 1, 2>, keep_dimensions = true}
// CHECK: %[[R:.*]] = "nn.reshape"(%[[S]]) {new_shape = array<i64: 1, 8, 1, 1>}
// CHECK: %[[M:.*]] = "nn.reduce_max"(%arg0) {axes = array<i64: 1>, keep_dimensions = false} {{.*}} -> tensor<1x5x8xf32>
// CHECK: %[[T:.*]] = "nn.transpose"(%[[M]]) {permutation = array<i64: 0, 2, 1>}
// CHECK: return %[[R]], %[[T]]
func.func @reductions(%x: tensor<1x4x5x8xf32>) -> (tensor<1x8x1x1xf32>, tensor<1x8x5xf32>) {
  %t = "nn.transpose"(%x) {permutation = array<i64: 0, 3, 1, 2>} : (tensor<1x4x5x8xf32>) -> tensor<1x8x4x5xf32>
  %s = "nn.reduce_mean"(%t) {axes = array<i64: 2, 3>, keep_dimensions = true} : (tensor<1x8x4x5xf32>) -> tensor<1x8x1x1xf32>
  %m = "nn.reduce_max"(%t) {axes = array<i64: 2>, keep_dimensions = false} : (tensor<1x8x4x5xf32>) -> tensor<1x8x5xf32>
  return %s, %m : tensor<1x8x1x1xf32>, tensor<1x8x5xf32>
}

// -----

// Dynamic height and width do not stop the layout: the conv and the relu run in NHWC over the
// symbols (transposes permute the #nn.dims expressions with the dimensions).
// CHECK-LABEL: func.func @dynamic_chain
// CHECK: "nn.transpose"(%arg0) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK: "nn.conv2d"({{.*}}input_layout = "nhwc"{{.*}} -> tensor<1x?x?x2xf32, #nn.dims<"h, w; h=1..64, w=1..64">>
// CHECK: "nn.relu"({{.*}} : (tensor<1x?x?x2xf32, #nn.dims<"h, w; h=1..64, w=1..64">>)
// CHECK: "nn.transpose"({{.*}}) {permutation = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: nn.transpose
func.func @dynamic_chain(%x: tensor<1x3x?x?xf32, #nn.dims<"h, w; h=1..64, w=1..64">>) -> tensor<1x2x?x?xf32, #nn.dims<"h, w; h=1..64, w=1..64">> {
  %w = "nn.constant"() {value = dense<1.0> : tensor<2x3x1x1xf32>} : () -> tensor<2x3x1x1xf32>
  %c = "nn.conv2d"(%x, %w) {operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x?x?xf32, #nn.dims<"h, w; h=1..64, w=1..64">>, tensor<2x3x1x1xf32>) -> tensor<1x2x?x?xf32, #nn.dims<"h, w; h=1..64, w=1..64">>
  %r = "nn.relu"(%c) : (tensor<1x2x?x?xf32, #nn.dims<"h, w; h=1..64, w=1..64">>) -> tensor<1x2x?x?xf32, #nn.dims<"h, w; h=1..64, w=1..64">>
  return %r : tensor<1x2x?x?xf32, #nn.dims<"h, w; h=1..64, w=1..64">>
}
