// RUN: estuary-opt %s --split-input-file --nn-verify | FileCheck %s
// Dynamic dimensions print and parse back: the #nn.dims type encoding, shape attributes in their
// text form, the module's bindings of unified symbols.

// CHECK-LABEL: func.func @attention_shapes
// CHECK-SAME: tensor<1x?x64xf32, #nn.dims<"seq; seq=1..512">>
// CHECK: new_shape = "1, seq, 4, 16; seq=1..512"
// CHECK-SAME: -> tensor<1x?x4x16xf32, #nn.dims<"seq; seq=1..512">>
// CHECK: starts = "0, seq - 1, 0; seq=1..512"
// CHECK: "nn.concat"
// CHECK-SAME: -> tensor<1x?x64xf32, #nn.dims<"2*seq; seq=1..512">>
func.func @attention_shapes(%x: tensor<1x?x64xf32, #nn.dims<"seq; seq=1..512">>) -> (tensor<1x?x4x16xf32, #nn.dims<"seq; seq=1..512">>, tensor<1x1x64xf32>, tensor<1x?x64xf32, #nn.dims<"2*seq; seq=1..512">>) {
  %0 = "nn.reshape"(%x) {new_shape = "1, seq, 4, 16; seq=1..512"} : (tensor<1x?x64xf32, #nn.dims<"seq; seq=1..512">>) -> tensor<1x?x4x16xf32, #nn.dims<"seq; seq=1..512">>
  %1 = "nn.slice"(%x) {starts = "0, seq - 1, 0; seq=1..512", sizes = array<i64: 1, 1, 64>} : (tensor<1x?x64xf32, #nn.dims<"seq; seq=1..512">>) -> tensor<1x1x64xf32>
  %2 = "nn.concat"(%x, %x) {axis = 1 : i64, operandSegmentSizes = array<i32: 2>} : (tensor<1x?x64xf32, #nn.dims<"seq; seq=1..512">>, tensor<1x?x64xf32, #nn.dims<"seq; seq=1..512">>) -> tensor<1x?x64xf32, #nn.dims<"2*seq; seq=1..512">>
  return %0, %1, %2 : tensor<1x?x4x16xf32, #nn.dims<"seq; seq=1..512">>, tensor<1x1x64xf32>, tensor<1x?x64xf32, #nn.dims<"2*seq; seq=1..512">>
}

// -----

// A mask whose length is another input's symbol: the module's binding `m = seq` lets the
// broadcast meet (the runtime checks that the two lengths agree).
// CHECK: module attributes {nn.dims = ["m = seq; seq=1..512"]}
// CHECK-LABEL: func.func @masked
// CHECK: "nn.add"
// CHECK-SAME: -> tensor<1x?x?xf32, #nn.dims<"seq, seq; seq=1..512">>
module attributes {nn.dims = ["m = seq; seq=1..512"]} {
  func.func @masked(%s: tensor<1x?x?xf32, #nn.dims<"seq, seq; seq=1..512">>, %mask: tensor<1x1x?xf32, #nn.dims<"m; m=1..512">>) -> tensor<1x?x?xf32, #nn.dims<"seq, seq; seq=1..512">> {
    %0 = "nn.add"(%s, %mask) : (tensor<1x?x?xf32, #nn.dims<"seq, seq; seq=1..512">>, tensor<1x1x?xf32, #nn.dims<"m; m=1..512">>) -> tensor<1x?x?xf32, #nn.dims<"seq, seq; seq=1..512">>
    return %0 : tensor<1x?x?xf32, #nn.dims<"seq, seq; seq=1..512">>
  }
}

// -----

// A strided convolution over a dynamic image: the output size is the floor expression.
// CHECK-LABEL: func.func @strided
// CHECK-SAME: -> tensor<1x4x?x?xf32, #nn.dims<"(h + 1)//2, (w + 1)//2; h=1..512, w=1..512">>
func.func @strided(%x: tensor<1x3x?x?xf32, #nn.dims<"h, w; h=1..512, w=1..512">>, %k: tensor<4x3x3x3xf32>) -> tensor<1x4x?x?xf32, #nn.dims<"(h + 1)//2, (w + 1)//2; h=1..512, w=1..512">> {
  %0 = "nn.conv2d"(%x, %k) {padding = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<1x3x?x?xf32, #nn.dims<"h, w; h=1..512, w=1..512">>, tensor<4x3x3x3xf32>) -> tensor<1x4x?x?xf32, #nn.dims<"(h + 1)//2, (w + 1)//2; h=1..512, w=1..512">>
  return %0 : tensor<1x4x?x?xf32, #nn.dims<"(h + 1)//2, (w + 1)//2; h=1..512, w=1..512">>
}
