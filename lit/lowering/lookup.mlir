// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// Sparse LSH without weights: a reduction generic hashes (seed ++ row) with i64 arith (the
// 4 + 3 * 4 = 16-byte key takes Fingerprint64's 8..16-byte branch) and sums the signed hashes in
// f64 (the pass returns keep-f64, so that IREE keeps f64); a second generic packs the bits, the first one
// most significant.
// CHECK: // lower-nn-to-tosa: keep-f64=True
// CHECK-LABEL: func.func @sparse
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK: arith.bitcast {{.*}} : f32 to i32
// CHECK: tensor.extract
// CHECK: arith.muli {{.*}} : i64
// CHECK: arith.sitofp {{.*}} : i64 to f64
// CHECK: arith.addf {{.*}} : f64
// CHECK: linalg.generic
// CHECK: arith.cmpf ogt
// CHECK: arith.shli {{.*}} : i32
// CHECK: return {{.*}} : tensor<2xi32>
func.func @sparse(%h: tensor<2x3xf32>, %x: tensor<2x3xf32>) -> tensor<2xi32> {
  %0 = "nn.lsh_projection"(%h, %x) {type = "sparse", operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// Dense with weights over a uint8 input (1-byte elements, a 4 + 5 = 9-byte key): weights are
// widened to f64 and multiply the hash; the bits are reshaped to num_hash * num_bits.
// CHECK-LABEL: func.func @dense
// CHECK: linalg.generic
// CHECK: arith.extui {{.*}} : i8 to i64
// CHECK: arith.extf {{.*}} : f32 to f64
// CHECK: arith.mulf {{.*}} : f64
// CHECK: linalg.generic
// CHECK: arith.extui {{.*}} : i1 to i32
// CHECK: tosa.reshape
// CHECK: return {{.*}} : tensor<6xi32>
func.func @dense(%h: tensor<2x3xf32>, %x: tensor<4x5xui8>, %w: tensor<4xf32>) -> tensor<6xi32> {
  %0 = "nn.lsh_projection"(%h, %x, %w) {type = "dense", operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<2x3xf32>, tensor<4x5xui8>, tensor<4xf32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
}
