// RUN: estuary-opt %s --split-input-file --nn-fold-constants --nn-cse --nn-dce | FileCheck %s

// Constants fold through element-wise ops; the folded value is exact.
// CHECK-LABEL: func.func @fold
// CHECK: %[[C:.*]] = "nn.constant"() {value = dense<[2.000000e+00, 5.000000e+00]> : tensor<2xf32>}
// CHECK-NEXT: %[[R:.*]] = "nn.mul"(%arg0, %[[C]])
// CHECK-NOT: nn.add
func.func @fold(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = "nn.constant"() {value = dense<[1.0, 4.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %b = "nn.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %s = "nn.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %r = "nn.mul"(%x, %s) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// Duplicates merge; dead ops disappear.
// CHECK-LABEL: func.func @cse_dce
// CHECK: %[[E:.*]] = "nn.exp"(%arg0)
// CHECK-NOT: nn.exp
// CHECK-NOT: nn.neg
// CHECK: "nn.add"(%[[E]], %[[E]])
func.func @cse_dce(%x: tensor<2xf32>) -> tensor<2xf32> {
  %e1 = "nn.exp"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %e2 = "nn.exp"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %dead = "nn.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %r = "nn.add"(%e1, %e2) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// Integer folding follows the op's semantics (truncating division, no trap on zero).
// CHECK-LABEL: func.func @int_div
// CHECK: dense<[-3, 0]> : tensor<2xi32>
func.func @int_div() -> tensor<2xi32> {
  %a = "nn.constant"() {value = dense<[-7, 5]> : tensor<2xi32>} : () -> tensor<2xi32>
  %b = "nn.constant"() {value = dense<[2, 0]> : tensor<2xi32>} : () -> tensor<2xi32>
  %r = "nn.div"(%a, %b) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %r : tensor<2xi32>
}
