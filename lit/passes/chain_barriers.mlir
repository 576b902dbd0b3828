// RUN: %python %S/Inputs/elementwise_chains.py | estuary-opt - --limit-elementwise-chains | FileCheck %s

// limit-elementwise-chains: a util.optimization_barrier after every 256th op of an elementwise
// chain (IREE's fusion passes take time quadratic in a fused chain's length). The input is
// generated: Inputs/elementwise_chains.py says what each function holds.
// CHECK: // limit-elementwise-chains: chain-barriers=3

// 600 ops in one chain: barriers after the 256th and the 512th, none after the last 88.
// CHECK-LABEL: func.func @long
// CHECK-COUNT-256: tosa.tanh
// CHECK-NEXT: util.optimization_barrier
// CHECK-COUNT-256: tosa.tanh
// CHECK-NEXT: util.optimization_barrier
// CHECK-COUNT-88: tosa.tanh
// CHECK-NEXT: return

// A reduction ends a chain: two chains of 200, no barrier.
// CHECK-LABEL: func.func @broken
// CHECK-NOT: util.optimization_barrier
// CHECK: tosa.reduce_sum
// CHECK-NOT: util.optimization_barrier

// Chains of 200 and 100 meet in an add (depth 201, the longer path): the 55th op after it is
// the 256th of the chain.
// CHECK-LABEL: func.func @joined
// CHECK: tosa.add
// CHECK-COUNT-55: tosa.tanh
// CHECK-NEXT: util.optimization_barrier
// CHECK-COUNT-5: tosa.tanh
// CHECK-NEXT: return
