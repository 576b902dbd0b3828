// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa=target=vulkan-spirv --spirv-isolate-reductions | FileCheck %s

// Softmax over an outer axis: on the SPIR-V targets both reductions' results pass through an
// optimization barrier, so IREE keeps them out of the dispatch that reads them back over x.
// CHECK-LABEL: func.func @softmax_outer
// CHECK: %[[M:.*]] = tosa.reduce_max %{{.*}} axis(0)
// CHECK: util.optimization_barrier %[[M]]
// CHECK: %[[S:.*]] = tosa.reduce_sum %{{.*}} axis(0)
// CHECK: util.optimization_barrier %[[S]]
func.func @softmax_outer(%x: tensor<3x20xf32>) -> tensor<3x20xf32> {
  %0 = "nn.softmax"(%x) {axis = 0 : i64} : (tensor<3x20xf32>) -> tensor<3x20xf32>
  return %0 : tensor<3x20xf32>
}

// -----

// Over the innermost axis they fuse correctly: no barrier.
// CHECK-LABEL: func.func @softmax_inner
// CHECK-NOT: util.optimization_barrier
func.func @softmax_inner(%x: tensor<3x20xf32>) -> tensor<3x20xf32> {
  %0 = "nn.softmax"(%x) {axis = 1 : i64} : (tensor<3x20xf32>) -> tensor<3x20xf32>
  return %0 : tensor<3x20xf32>
}

// -----

// A max over axes 0 and 2 is a linalg.generic reduction; axis 0 has a kept axis inside it.
// CHECK-LABEL: func.func @max_outer
// CHECK: %[[R:.*]] = linalg.generic
// CHECK: util.optimization_barrier %[[R]]
func.func @max_outer(%x: tensor<3x20x6xf32>) -> tensor<20xf32> {
  %0 = "nn.reduce_max"(%x) {axes = array<i64: 0, 2>} : (tensor<3x20x6xf32>) -> tensor<20xf32>
  return %0 : tensor<20xf32>
}

// -----

// For a GPU target a one-row product with a constant matrix is a tosa.matmul, not the CPU's
// multi-result generic (which IREE's SPIR-V code got wrong for float16).
// CHECK-LABEL: func.func @row_times_constant
// CHECK: tosa.matmul
// CHECK-NOT: linalg.generic
  func.func @row_times_constant(%a: tensor<1x64xf16>) -> tensor<1x600xf16> {
    %b = "nn.constant"() {value = dense<1.0> : tensor<64x600xf16>} : () -> tensor<64x600xf16>
    %0 = "nn.matmul"(%a, %b) : (tensor<1x64xf16>, tensor<64x600xf16>) -> tensor<1x600xf16>
    return %0 : tensor<1x600xf16>
  }

// -----

// log1p on a GPU target: a series in s = x / (2 + x) for |x| < 1/4, log(1 + x) beyond.
// CHECK-LABEL: func.func @softplus_gpu
// CHECK-NOT: math.log1p
// CHECK: arith.divf
// CHECK: math.log
  func.func @softplus_gpu(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = "nn.softplus"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }

// -----

// int64 gather indices on a GPU target are saturated to int32 in an op of their own.
// CHECK-LABEL: func.func @gather_int64
// CHECK: arith.minsi
// CHECK: arith.maxsi
// CHECK: arith.trunci %{{.*}} : i64 to i32
// CHECK: tensor.extract
  func.func @gather_int64(%x: tensor<2x3x4xf32>, %i: tensor<2xi64>) -> tensor<2x3x2xf32> {
    %0 = "nn.gather"(%x, %i) {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x3x2xf32>
    return %0 : tensor<2x3x2xf32>
  }

// -----

// A batch-1 recurrent step's gate products are one multi-result generic on every target (the
// generic rule); only llvm-cpu's rule marks it for its tile rules (backends/llvm_cpu/contract.py).
// CHECK-LABEL: func.func @gru_cell_gpu
// CHECK: %{{.*}}:3 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CHECK-NOT: estuary.matvec
// CHECK: return
  func.func @gru_cell_gpu(%x: tensor<1x2xf32>, %w: tensor<9x2xf32>, %r: tensor<9x3xf32>, %h: tensor<1x3xf32>) -> tensor<1x3xf32> {
    %0 = "nn.gru_cell"(%x, %w, %r, %h) {hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<1x2xf32>, tensor<9x2xf32>, tensor<9x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
    return %0 : tensor<1x3xf32>
  }
