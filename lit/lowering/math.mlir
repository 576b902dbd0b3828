// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// NNEF (§4.2.1) inverse trigonometric and hyperbolic functions
// CHECK-LABEL: func.func @sinh
// CHECK: linalg.generic
// CHECK: math.expm1 %{{.*}} : f32
// CHECK: math.sinh %{{.*}} : f32
// CHECK: arith.select
// CHECK-NOT: nn.
func.func @sinh(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.sinh"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @cosh
// CHECK: linalg.generic
// CHECK: math.cosh %{{.*}} : f32
// CHECK-NOT: nn.
func.func @cosh(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.cosh"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @asin
// CHECK: linalg.generic
// CHECK: math.asin %{{.*}} : f32
// CHECK-NOT: nn.
func.func @asin(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.asin"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @acos
// CHECK: linalg.generic
// CHECK: math.acos %{{.*}} : f32
// CHECK-NOT: nn.
func.func @acos(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.acos"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @atan
// CHECK: linalg.generic
// CHECK: math.atan %{{.*}} : f32
// CHECK-NOT: nn.
func.func @atan(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.atan"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @asinh
// CHECK: linalg.generic
// CHECK: math.log1p %{{.*}} : f32
// CHECK: math.copysign
// CHECK-NOT: nn.
func.func @asinh(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.asinh"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @acosh
// CHECK: linalg.generic
// CHECK: math.log1p %{{.*}} : f32
// CHECK: arith.select
// CHECK-NOT: nn.
func.func @acosh(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.acosh"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @atanh
// CHECK: linalg.generic
// CHECK: math.log1p %{{.*}} : f32
// CHECK: math.copysign
// CHECK-NOT: nn.
func.func @atanh(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.atanh"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Core ML sign, round, exp2, mod, floor_div
// CHECK-LABEL: func.func @sign
// CHECK: linalg.generic
// CHECK: arith.cmpf ogt
// CHECK-NOT: nn.
func.func @sign(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.sign"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @round
// CHECK: math.roundeven %{{.*}} : f32
// CHECK-NOT: nn.
func.func @round(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.round"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @exp2
// CHECK: math.exp2 %{{.*}} : f32
// CHECK-NOT: nn.
func.func @exp2(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.exp2"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @mod
// CHECK: linalg.generic
// CHECK: arith.remf
// CHECK: arith.select
// CHECK-NOT: nn.
func.func @mod(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.mod"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @floor_div
// CHECK: arith.remf
// CHECK: arith.divf
// CHECK: math.roundeven
// CHECK-NOT: nn.
func.func @floor_div(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %0 = "nn.floor_div"(%a, %b) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// sign of signed integers (WebNN): select(x > 0, 1, select(x < 0, -1, x)).
// CHECK-LABEL: func.func @sign_int
// CHECK: linalg.generic
// CHECK-DAG: arith.cmpi slt
// CHECK-DAG: arith.cmpi sgt
// CHECK-NOT: "nn.
func.func @sign_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "nn.sign"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
