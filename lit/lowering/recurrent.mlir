// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// One GRU step: one matmul for the input projection of every gate, gates sliced out of its
// [.., 3 * hiddenSize] result; with batch 1 the three gates' recurrent products are one
// linalg.generic (a dot product per hidden unit, marked for cpu-tiles) from a zero fill, joined
// like the matmul's result (so IREE keeps the gate math in a dispatch of its own); the reset
// gate multiplies the recurrent n product (resetAfter); h' = z * h + n * (1 - z).
// CHECK-LABEL: func.func @gru_cell
// CHECK-SAME: (%[[X:.*]]: tensor<1x2xf32>, %[[W:.*]]: tensor<9x2xf32>, %[[R:.*]]: tensor<9x3xf32>, %[[H:.*]]: tensor<1x3xf32>)
// CHECK: %[[X3:.*]] = tosa.reshape %[[X]]
// CHECK: %[[WT:.*]] = tosa.transpose %{{.*}} perms([0, 2, 1]) : (tensor<1x9x2xf32>) -> tensor<1x2x9xf32>
// CHECK: tosa.matmul %[[X3]], %[[WT]], {{.*}} -> tensor<1x1x9xf32>
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[P:.*]]:3 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins({{.*}} : tensor<3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) outs(%[[Z]], %[[Z]], %[[Z]] : {{.*}}) attrs = {estuary.matvec}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tosa.concat %[[P]]#0, %[[P]]#1, %[[P]]#2 axis(0) {{.*}} -> tensor<9xf32>
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: tosa.mul
// CHECK: tosa.tanh
// CHECK: tosa.sub
// CHECK: %[[OUT:.*]] = tosa.reshape {{.*}} -> tensor<1x3xf32>
// CHECK: return %[[OUT]]
// CHECK-NOT: nn.
func.func @gru_cell(%x: tensor<1x2xf32>, %w: tensor<9x2xf32>, %r: tensor<9x3xf32>, %h: tensor<1x3xf32>) -> tensor<1x3xf32> {
  %0 = "nn.gru_cell"(%x, %w, %r, %h) {hidden_size = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0>} : (tensor<1x2xf32>, tensor<9x2xf32>, tensor<9x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  return %0 : tensor<1x3xf32>
}

// -----

// Backward: the input is reversed in time once; with resetAfter false both biases are summed into
// the input projection, and each step has a (z, r) recurrent product (one generic, batch 1) and a
// [3 x h] matmul for n, after the reset. The sequence stacks the steps by iteration.
// CHECK-LABEL: func.func @gru_backward
// CHECK: %[[B:.*]] = tosa.add %arg3, %arg4 : (tensor<1x9xf32>, tensor<1x9xf32>) -> tensor<1x9xf32>
// CHECK: tosa.reverse %arg0 axis(0) : (tensor<2x1x2xf32>) -> tensor<2x1x2xf32>
// CHECK: tosa.matmul {{.*}} -> tensor<1x2x9xf32>
// CHECK: tosa.reshape %[[B]]
// CHECK: linalg.generic {{.*}} outs({{.*}} : tensor<3xf32>, tensor<3xf32>) attrs = {estuary.matvec}
// CHECK: tosa.matmul {{.*}} : (tensor<1x1x3xf32>, tensor<1x3x3xf32>, {{.*}}) -> tensor<1x1x3xf32>
// CHECK: %[[S0:.*]] = tosa.reshape {{.*}} -> tensor<1x1x1x3xf32>
// CHECK: linalg.generic {{.*}} outs({{.*}} : tensor<3xf32>, tensor<3xf32>) attrs = {estuary.matvec}
// CHECK: tosa.matmul {{.*}} : (tensor<1x1x3xf32>, tensor<1x3x3xf32>, {{.*}}) -> tensor<1x1x3xf32>
// CHECK: tosa.tanh
// CHECK: %[[H:.*]] = tosa.add
// CHECK: %[[S1:.*]] = tosa.reshape %[[H]], {{.*}} -> tensor<1x1x1x3xf32>
// CHECK: %[[SEQ:.*]] = tosa.concat %[[S0]], %[[S1]] axis(0) {{.*}} -> tensor<2x1x1x3xf32>
// CHECK: return %[[H]], %[[SEQ]]
func.func @gru_backward(%x: tensor<2x1x2xf32>, %w: tensor<1x9x2xf32>, %r: tensor<1x9x3xf32>, %b: tensor<1x9xf32>, %rb: tensor<1x9xf32>) -> (tensor<1x1x3xf32>, tensor<2x1x1x3xf32>) {
  %0:2 = "nn.gru"(%x, %w, %r, %b, %rb) {steps = 2 : i64, hidden_size = 3 : i64, reset_after = false, return_sequence = true, direction = "backward", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>} : (tensor<2x1x2xf32>, tensor<1x9x2xf32>, tensor<1x9x3xf32>, tensor<1x9xf32>, tensor<1x9xf32>) -> (tensor<1x1x3xf32>, tensor<2x1x1x3xf32>)
  return %0#0, %0#1 : tensor<1x1x3xf32>, tensor<2x1x1x3xf32>
}

// -----

// Both directions: the forward and the time-reversed input are the batch of one input matmul and
// the two directions' states are the batch of each step's recurrent matmul (batch 2: a matmul).
// CHECK-LABEL: func.func @lstm_both
// CHECK: %[[REV:.*]] = tosa.reverse %arg0 axis(0)
// CHECK: %[[RF:.*]] = tosa.reshape %[[REV]]
// CHECK: %[[XF:.*]] = tosa.reshape %arg0
// CHECK: %[[XS:.*]] = tosa.concat %[[XF]], %[[RF]] axis(0) {{.*}} -> tensor<2x6x2xf32>
// CHECK: tosa.matmul %[[XS]], {{.*}} -> tensor<2x6x8xf32>
// CHECK: tosa.const values(dense<0.000000e+00> : tensor<2x2x2xf32>)
// CHECK-COUNT-3: tosa.matmul {{.*}} : (tensor<2x2x2xf32>, tensor<2x2x8xf32>, {{.*}}) -> tensor<2x2x8xf32>
// CHECK: %[[SEQ:.*]] = tosa.concat {{.*}} axis(0) : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<3x2x2x2xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[SEQ]]
// CHECK-NOT: nn.
func.func @lstm_both(%x: tensor<3x2x2xf32>, %w: tensor<2x8x2xf32>, %r: tensor<2x8x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x2xf32>, tensor<3x2x2x2xf32>) {
  %0:3 = "nn.lstm"(%x, %w, %r) {steps = 3 : i64, hidden_size = 2 : i64, return_sequence = true, direction = "both", operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0>} : (tensor<3x2x2xf32>, tensor<2x8x2xf32>, tensor<2x8x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2x2xf32>, tensor<3x2x2x2xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x2x2xf32>, tensor<2x2x2xf32>, tensor<3x2x2x2xf32>
}

// -----

// float16 is computed in float32 and rounded once; peepholes (i, o, f) multiply the incoming cell
// state; a relu activation is a clamp at zero. Each gate adds its slice of the input projection
// to its slice of the joined recurrent products (one add per gate, not one over all gates, so
// IREE fuses the adds into the gate math's dispatch).
// CHECK-LABEL: func.func @lstm_cell_f16
// CHECK-SAME: %[[C:arg4]]: tensor<1x2xf16>
// CHECK: %[[CW:.*]] = tosa.cast %[[C]] : (tensor<1x2xf16>) -> tensor<1x2xf32>
// CHECK: %[[C3:.*]] = tosa.reshape %[[CW]]
// CHECK: %[[XP:.*]] = tosa.matmul {{.*}} -> tensor<1x1x8xf32>
// CHECK: linalg.generic {{.*}} outs({{.*}} : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) attrs = {estuary.matvec}
// CHECK: tosa.concat {{.*}} axis(0) {{.*}} -> tensor<8xf32>
// CHECK: %[[P:.*]] = tosa.reshape {{.*}} -> tensor<1x1x8xf32>
// CHECK-NOT: tosa.add {{.*}} -> tensor<1x1x8xf32>
// CHECK: %[[XI:.*]] = tosa.slice %[[XP]], {{.*}} -> tensor<1x1x2xf32>
// CHECK: %[[PI:.*]] = tosa.slice %[[P]], {{.*}} -> tensor<1x1x2xf32>
// CHECK: tosa.add %[[XI]], %[[PI]] : (tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<1x1x2xf32>
// CHECK: tosa.mul %[[C3]]
// CHECK: tosa.mul %[[C3]]
// CHECK: tosa.mul %[[C3]]
// CHECK: tosa.clamp %{{.*}} min_val(0.000000e+00 : f32)
// CHECK: %[[CT:.*]] = tosa.add
// CHECK: tosa.tanh %[[CT]]
// CHECK: %[[HO:.*]] = tosa.cast {{.*}} : (tensor<1x2xf32>) -> tensor<1x2xf16>
// CHECK: %[[CO:.*]] = tosa.cast {{.*}} : (tensor<1x2xf32>) -> tensor<1x2xf16>
// CHECK: return %[[HO]], %[[CO]]
func.func @lstm_cell_f16(%x: tensor<1x2xf16>, %w: tensor<8x2xf16>, %r: tensor<8x2xf16>, %h: tensor<1x2xf16>, %c: tensor<1x2xf16>, %p: tensor<6xf16>) -> (tensor<1x2xf16>, tensor<1x2xf16>) {
  %0:2 = "nn.lstm_cell"(%x, %w, %r, %h, %c, %p) {hidden_size = 2 : i64, activations = ["sigmoid", "relu", "tanh"], operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 1>} : (tensor<1x2xf16>, tensor<8x2xf16>, tensor<8x2xf16>, tensor<1x2xf16>, tensor<1x2xf16>, tensor<6xf16>) -> (tensor<1x2xf16>, tensor<1x2xf16>)
  return %0#0, %0#1 : tensor<1x2xf16>, tensor<1x2xf16>
}
