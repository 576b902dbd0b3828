// RUN: estuary-opt %s --split-input-file --nn-split-elementwise | FileCheck %s

// A split of an add (its only user) goes onto both operands; each part is added on its own.
// CHECK-LABEL: func.func @gates
// CHECK: %[[A:.*]]:4 = "nn.split"(%arg0) {axis = 1 : i64, splits = array<i64: 2, 2, 2, 2>}
// CHECK: %[[B:.*]]:4 = "nn.split"(%arg1) {axis = 1 : i64, splits = array<i64: 2, 2, 2, 2>}
// CHECK: "nn.add"(%[[A]]#0, %[[B]]#0)
// CHECK: "nn.add"(%[[A]]#1, %[[B]]#1)
// CHECK: "nn.add"(%[[A]]#2, %[[B]]#2)
// CHECK: "nn.add"(%[[A]]#3, %[[B]]#3)
// CHECK-NOT: "nn.add"
func.func @gates(%x: tensor<1x8xf32>, %p: tensor<1x8xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) {
  %0 = "nn.add"(%x, %p) : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  %1:4 = "nn.split"(%0) {splits = array<i64: 2, 2, 2, 2>, axis = 1 : i64} : (tensor<1x8xf32>) -> (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>)
  return %1#0, %1#1, %1#2, %1#3 : tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
}

// -----

// A chain of element-wise ops: the split moves up through both.
// CHECK-LABEL: func.func @chain
// CHECK: "nn.split"(%arg0)
// CHECK: "nn.split"(%arg1)
// CHECK-COUNT-2: "nn.mul"
// CHECK: "nn.split"(%arg2)
// CHECK-COUNT-2: "nn.sub"
// CHECK-NOT: "nn.split"
func.func @chain(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>, %c: tensor<4x3xf32>) -> (tensor<1x3xf32>, tensor<3x3xf32>) {
  %0 = "nn.mul"(%a, %b) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = "nn.sub"(%0, %c) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %2:2 = "nn.split"(%1) {splits = array<i64: 1, 3>, axis = 0 : i64} : (tensor<4x3xf32>) -> (tensor<1x3xf32>, tensor<3x3xf32>)
  return %2#0, %2#1 : tensor<1x3xf32>, tensor<3x3xf32>
}

// -----

// Left alone: an add with another user, and an add that broadcasts one operand.
// CHECK-LABEL: func.func @kept
// CHECK: %[[S:.*]] = "nn.add"(%arg0, %arg1)
// CHECK: "nn.split"(%[[S]])
// CHECK: %[[T:.*]] = "nn.add"(%arg0, %arg2)
// CHECK: "nn.split"(%[[T]])
// CHECK-NOT: "nn.split"
func.func @kept(%x: tensor<1x8xf32>, %p: tensor<1x8xf32>, %q: tensor<1x1xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) {
  %0 = "nn.add"(%x, %p) : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32>
  %1:2 = "nn.split"(%0) {splits = array<i64: 4, 4>, axis = 1 : i64} : (tensor<1x8xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>)
  %2 = "nn.add"(%x, %q) : (tensor<1x8xf32>, tensor<1x1xf32>) -> tensor<1x8xf32>
  %3:2 = "nn.split"(%2) {splits = array<i64: 4, 4>, axis = 1 : i64} : (tensor<1x8xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>)
  return %1#0, %1#1, %0, %3#0, %3#1 : tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}
