// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s
// Lowering with dynamic dimensions (passes/lowering/dynamic.py): sizes read with tensor.dim from
// the argument that carries each symbol (with its bounds stated by util.assume.int), index
// arithmetic for expressions, tensor ops where TOSA needs fixed shapes, and no #nn.dims encoding
// left for IREE.

// CHECK-NOT: #nn.dims
// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%arg0: tensor<1x?x8xf32>, %arg1: tensor<1x?x8xf32>)
// CHECK: tensor.dim %arg0, %{{.*}} : tensor<1x?x8xf32>
// CHECK: tensor.empty(%{{.*}}) : tensor<1x?x8xf32>
// CHECK: linalg.generic
// CHECK: arith.addf
module attributes {nn.dims = ["m = seq; seq=1..64"]} {
  func.func @binary(%a: tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">>, %b: tensor<1x?x8xf32, #nn.dims<"m; m=1..64">>) -> tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">> {
    %0 = "nn.add"(%a, %b) : (tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">>, tensor<1x?x8xf32, #nn.dims<"m; m=1..64">>) -> tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">>
    return %0 : tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">>
  }
}

// -----

// Splitting the hidden dimension into heads regroups dimensions: expand_shape, no tensor.reshape.
// CHECK-LABEL: func.func @heads
// CHECK: tensor.expand_shape %arg0 {{\[}}[0], [1], [2, 3]] output_shape [1, %{{.*}}, 4, 16]
// CHECK-NOT: tensor.reshape
func.func @heads(%x: tensor<1x?x64xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<1x?x4x16xf32, #nn.dims<"seq; seq=1..64">> {
  %0 = "nn.reshape"(%x) {new_shape = "1, seq, 4, 16; seq=1..64"} : (tensor<1x?x64xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<1x?x4x16xf32, #nn.dims<"seq; seq=1..64">>
  return %0 : tensor<1x?x4x16xf32, #nn.dims<"seq; seq=1..64">>
}

// -----

// The last position of a dynamic sequence: offset seq - 1 computed in index arithmetic.
// CHECK-LABEL: func.func @last_token
// CHECK: tensor.dim %arg0
// CHECK: %[[DIM:.*]] = util.assume.int %{{.*}}<umin = 1, umax = 64> : index
// CHECK: %[[OFF:.*]] = arith.addi %{{.*}}, %[[DIM]]
// CHECK: tensor.extract_slice %arg0[0, %[[OFF]], 0] [1, 1, 64] [1, 1, 1]
func.func @last_token(%x: tensor<1x?x64xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<1x1x64xf32> {
  %0 = "nn.slice"(%x) {starts = "0, seq - 1, 0; seq=1..64", sizes = array<i64: 1, 1, 64>} : (tensor<1x?x64xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<1x1x64xf32>
  return %0 : tensor<1x1x64xf32>
}

// -----

// A product with a dynamic row count stays TOSA's matmul.
// CHECK-LABEL: func.func @rows
// CHECK: tosa.matmul %arg0, %{{.*}} : (tensor<1x?x8xf32>, tensor<1x8x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x?x8xf32>
func.func @rows(%x: tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">>, %w: tensor<1x8x8xf32>) -> tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">> {
  %0 = "nn.matmul"(%x, %w) : (tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">>, tensor<1x8x8xf32>) -> tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">>
  return %0 : tensor<1x?x8xf32, #nn.dims<"seq; seq=1..64">>
}

// -----

// A mean over a dynamic axis divides by the run-time count.
// CHECK-LABEL: func.func @mean
// CHECK: tosa.reduce_sum %arg0 axis(1)
// CHECK: arith.index_cast
// CHECK: arith.sitofp
// CHECK: arith.divf
func.func @mean(%x: tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<2xf32> {
  %0 = "nn.reduce_mean"(%x) {axes = array<i64: 1>} : (tensor<2x?xf32, #nn.dims<"seq; seq=1..64">>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// A strided convolution over a dynamic image: the input padded and sliced to the windows' reach,
// its windows copied out by one linalg.generic (im2col, reading x[n, 2*oh + i, 2*ow + j, c]), one
// matrix product with the weights.
// CHECK-LABEL: func.func @strided
// CHECK: tosa.pad
// CHECK: tensor.extract_slice
// CHECK: linalg.generic {{.*}} outs({{.*}} : tensor<1x?x?x3x3x3xf32>)
// CHECK: tosa.matmul {{.*}} : (tensor<1x?x27xf32>, tensor<1x27x4xf32>, {{.*}}) -> tensor<1x?x4xf32>
// CHECK-NOT: tosa.conv2d
func.func @strided(%x: tensor<1x3x?x?xf32, #nn.dims<"h, w; h=1..512, w=1..512">>, %k: tensor<4x3x3x3xf32>) -> tensor<1x4x?x?xf32, #nn.dims<"(h + 1)//2, (w + 1)//2; h=1..512, w=1..512">> {
  %0 = "nn.conv2d"(%x, %k) {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x?x?xf32, #nn.dims<"h, w; h=1..512, w=1..512">>, tensor<4x3x3x3xf32>) -> tensor<1x4x?x?xf32, #nn.dims<"(h + 1)//2, (w + 1)//2; h=1..512, w=1..512">>
  return %0 : tensor<1x4x?x?xf32, #nn.dims<"(h + 1)//2, (w + 1)//2; h=1..512, w=1..512">>
}
