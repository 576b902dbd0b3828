// RUN: estuary-opt %s --split-input-file --nn-verify --lower-nn-to-tosa | FileCheck %s

// CHECK-LABEL: func.func @add_broadcast
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK: %[[R:.*]] = tosa.reshape %[[B]]
// CHECK: tosa.add %[[A]], %[[R]] : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
// CHECK-NOT: nn.
func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "nn.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @sub
// CHECK: arith.subi
func.func @sub(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "nn.sub"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @mul
// CHECK: tosa.mul
func.func @mul(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.mul"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Unsigned integers become signless; division guards against zero divisors.
// CHECK-LABEL: func.func @div_u8
// CHECK-SAME: tensor<4xi8>
// CHECK: linalg.generic
// CHECK: arith.divui
// CHECK: arith.select
func.func @div_u8(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %0 = "nn.div"(%a, %b) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// CHECK-LABEL: func.func @max_nan
// CHECK: arith.maximumf
func.func @max_nan(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.max"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @greater_u8
// CHECK: arith.cmpi ugt
// CHECK: arith.extui
func.func @greater_u8(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %0 = "nn.greater"(%a, %b) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// Every remaining element-wise rule in one function: each nn op is replaced.
// CHECK-LABEL: func.func @all_unary
// CHECK-DAG: tosa.ceil
// CHECK-DAG: tosa.cos
// CHECK-DAG: tosa.erf
// CHECK-DAG: tosa.exp
// CHECK-DAG: tosa.floor
// CHECK-DAG: tosa.log
// CHECK-DAG: tosa.reciprocal
// CHECK-DAG: tosa.sin
// CHECK-DAG: math.sqrt
// CHECK-DAG: math.tan
// CHECK-DAG: tosa.abs
// CHECK-DAG: arith.negf
// CHECK-DAG: math.powf
// CHECK-DAG: arith.minimumf
// CHECK-NOT: "nn.
func.func @all_unary(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.ceil"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "nn.cos"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "nn.erf"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "nn.exp"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "nn.floor"(%3) : (tensor<4xf32>) -> tensor<4xf32>
  %5 = "nn.log"(%4) : (tensor<4xf32>) -> tensor<4xf32>
  %6 = "nn.reciprocal"(%5) : (tensor<4xf32>) -> tensor<4xf32>
  %7 = "nn.sin"(%6) : (tensor<4xf32>) -> tensor<4xf32>
  %8 = "nn.sqrt"(%7) : (tensor<4xf32>) -> tensor<4xf32>
  %9 = "nn.tan"(%8) : (tensor<4xf32>) -> tensor<4xf32>
  %10 = "nn.abs"(%9) : (tensor<4xf32>) -> tensor<4xf32>
  %11 = "nn.neg"(%10) : (tensor<4xf32>) -> tensor<4xf32>
  %12 = "nn.identity"(%11) : (tensor<4xf32>) -> tensor<4xf32>
  %13 = "nn.pow"(%12, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %14 = "nn.min"(%13, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %14 : tensor<4xf32>
}

// -----

// Cast float -> int saturates (clamp in f64, NaN -> 0); clamp keeps NaN; logical ops and where.
// CHECK-LABEL: func.func @cast_clamp_where
// CHECK-DAG: arith.fptosi
// CHECK-DAG: arith.cmpf uno
// CHECK-DAG: arith.andi
// CHECK-DAG: arith.ori
// CHECK-DAG: arith.xori
// CHECK-DAG: arith.cmpi eq
// CHECK-DAG: arith.select
// CHECK-NOT: "nn.
func.func @cast_clamp_where(%a: tensor<4xf32>, %c: tensor<4xui8>) -> (tensor<4xi32>, tensor<4xf32>, tensor<4xui8>) {
  %0 = "nn.clamp"(%a) {min_value = -1.0 : f64, max_value = 1.0 : f64} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "nn.cast"(%0) {to = "int32"} : (tensor<4xf32>) -> tensor<4xi32>
  %2 = "nn.where"(%c, %a, %0) : (tensor<4xui8>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = "nn.logical_and"(%c, %c) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %4 = "nn.logical_or"(%3, %c) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %5 = "nn.logical_xor"(%4, %c) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  %6 = "nn.logical_not"(%5) : (tensor<4xui8>) -> tensor<4xui8>
  %7 = "nn.equal"(%a, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xui8>
  %8 = "nn.lesser_or_equal"(%6, %7) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %1, %2, %8 : tensor<4xi32>, tensor<4xf32>, tensor<4xui8>
}

// -----

// Large constants are resources; unsigned ones are re-typed to signless integers.
// CHECK-LABEL: func.func @constants
// CHECK: tosa.const {{.*}}dense<[1, 2]> : tensor<2xi8>
func.func @constants() -> tensor<2xui8> {
  %0 = "nn.constant"() {value = dense<[1, 2]> : tensor<2xui8>} : () -> tensor<2xui8>
  %1 = "nn.identity"(%0) : (tensor<2xui8>) -> tensor<2xui8>
  return %1 : tensor<2xui8>
}

// -----

// Integer pow squares over the exponent's bits (IREE cannot lower math.ipowi); a negative signed
// exponent selects 1, -1 or 0.
// CHECK-LABEL: func.func @pow_integer
// CHECK: linalg.generic
// CHECK-NOT: math.ipowi
// CHECK: arith.shrui
// CHECK: arith.muli
// CHECK: arith.cmpi slt
// CHECK-NOT: "nn.
func.func @pow_integer(%a: tensor<4xi8>, %b: tensor<4xi8>) -> tensor<4xi8> {
  %0 = "nn.pow"(%a, %b) : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// Float pow: |x| ** e, the sign of an odd integer exponent restored for negative bases, NaN for a
// finite negative base and a non-integer exponent.
// CHECK-LABEL: func.func @pow_float_negative_base
// CHECK: linalg.generic
// CHECK-DAG: math.powf {{.*}} : f32
// CHECK-DAG: math.absf
// CHECK-DAG: math.copysign
// CHECK-DAG: math.floor
// CHECK-DAG: arith.negf
// CHECK-DAG: arith.constant 0x7FC00000 : f32
// CHECK-NOT: "nn.
func.func @pow_float_negative_base(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "nn.pow"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// notEqual is an unordered compare (NaN != x holds); isNaN / isInfinite classify floats to uint8.
// CHECK-LABEL: func.func @not_equal_is_nan_is_infinite
// CHECK-DAG: arith.cmpf une
// CHECK-DAG: arith.cmpi ne
// CHECK-DAG: arith.cmpf uno
// CHECK-DAG: arith.cmpf oeq
// CHECK-DAG: arith.constant 0x7F800000 : f32
// CHECK-NOT: "nn.
func.func @not_equal_is_nan_is_infinite(%a: tensor<4xf32>, %b: tensor<4xf32>, %i: tensor<4xi32>)
    -> (tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>) {
  %0 = "nn.not_equal"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xui8>
  %1 = "nn.not_equal"(%i, %i) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xui8>
  %2 = "nn.is_nan"(%a) : (tensor<4xf32>) -> tensor<4xui8>
  %3 = "nn.is_infinite"(%a) : (tensor<4xf32>) -> tensor<4xui8>
  return %0, %1, %2, %3 : tensor<4xui8>, tensor<4xui8>, tensor<4xui8>, tensor<4xui8>
}

// -----

// A constant exponent is specialised: x ** 3 multiplies out in f64 and restores the sign.
// CHECK-LABEL: func.func @pow_constant_cube
// CHECK: linalg.generic
// CHECK-NOT: math.powf
// CHECK: arith.extf {{.*}} to f64
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.truncf
// CHECK: math.copysign
// CHECK-NOT: "nn.
func.func @pow_constant_cube(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = "nn.constant"() {value = dense<3.000000e+00> : tensor<f32>} : () -> tensor<f32>
  %0 = "nn.pow"(%a, %e) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
