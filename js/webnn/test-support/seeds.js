'use strict';
// Valid calls of each MLGraphBuilder operation, the seeds the corpus (test-support/corpus.js)
// varies: {parameter or option: value}, an operand given as its descriptor. An operation absent
// here takes its signature's operands as float32 [2, 3] each. The first seed of an operation gives
// every option operand (the corpus also leaves each out) and leaves the other options to their
// defaults (the corpus varies them); further seeds set options whose other values need other
// operand shapes (layouts, groups, directions, ...).

const t = (dataType) => (...shape) => ({ dataType, shape });
const f32 = t('float32');
const u8 = t('uint8');
const i32 = t('int32');
const i8 = t('int8');

const logical = { a: u8(2, 3), b: u8(2, 3) };
const pool = [{ input: f32(1, 2, 5, 5) },
  { input: f32(1, 5, 5, 2), layout: 'nhwc', windowDimensions: [2, 2], strides: [2, 2], padding: [0, 1, 0, 1] }];

const SEEDS = {
  logicalAnd: logical,
  logicalOr: logical,
  logicalXor: logical,
  logicalNot: { a: u8(2, 3) },
  prelu: { input: f32(2, 3), slope: f32(3) },
  where: { condition: u8(2, 3), trueValue: f32(2, 3), falseValue: f32(3) },
  softmax: { input: f32(2, 3), axis: 1 },
  cast: { input: f32(2, 3), type: 'int32' },
  argMin: { input: f32(2, 3), axis: 1 },
  argMax: { input: f32(2, 3), axis: 1 },
  cumulativeSum: { input: f32(2, 3), axis: 0 },
  batchNormalization: [{ input: f32(2, 3, 4), mean: f32(3), variance: f32(3), scale: f32(3), bias: f32(3) },
    { input: f32(2, 3, 4), mean: f32(4), variance: f32(4), axis: 2 }],
  instanceNormalization: [{ input: f32(1, 2, 3, 3), scale: f32(2), bias: f32(2) },
    { input: f32(1, 3, 3, 2), scale: f32(2), layout: 'nhwc' }],
  layerNormalization: [{ input: f32(2, 3, 4), scale: f32(3, 4), bias: f32(3, 4) },
    { input: f32(2, 3, 4), scale: f32(2, 4), axes: [0, 2] }],
  conv2d: [{ input: f32(1, 2, 5, 5), filter: f32(4, 2, 3, 3), bias: f32(4) },
    { input: f32(1, 5, 5, 4), filter: f32(4, 3, 3, 1), inputLayout: 'nhwc', filterLayout: 'ohwi', groups: 4 }, // depthwise
    { input: f32(1, 2, 5, 5), filter: f32(3, 3, 2, 4), filterLayout: 'hwio', strides: [2, 2], padding: [1, 1, 1, 1] }],
  convTranspose2d: [{ input: f32(1, 2, 3, 3), filter: f32(2, 4, 3, 3), bias: f32(4) },
    { input: f32(1, 3, 3, 2), filter: f32(4, 3, 3, 2), inputLayout: 'nhwc', filterLayout: 'ohwi', strides: [2, 2],
      outputPadding: [1, 1] }],
  averagePool2d: pool,
  l2Pool2d: pool,
  maxPool2d: pool,
  resample2d: [{ input: f32(1, 2, 3, 4) }, { input: f32(1, 2, 3, 4), sizes: [6, 8] },
    { input: f32(1, 2, 3, 4), scales: [2, 2], axes: [1, 2], mode: 'linear' }],
  gemm: [{ a: f32(2, 3), b: f32(3, 4), c: f32(2, 4) }, { a: f32(3, 2), b: f32(4, 3), c: f32(4), aTranspose: true, bTranspose: true }],
  matmul: [{ a: f32(2, 2, 3), b: f32(3, 4) }, { a: f32(2, 1, 2, 3), b: f32(3, 3, 4) }],
  transpose: [{ input: f32(2, 3) }, { input: f32(2, 3, 4), permutation: [1, 2, 0] }],
  triangular: [{ input: f32(2, 3) }, { input: f32(3, 4), upper: false, diagonal: -1 }],
  reshape: { input: f32(2, 3), newShape: [3, 2] },
  expand: { input: f32(3, 1), newShape: [2, 3, 4] },
  concat: { inputs: [f32(2, 3), f32(2, 1)], axis: 1 },
  slice: [{ input: f32(4, 5), starts: [1, 0], sizes: [2, 5] }, { input: f32(4, 5), starts: [0, 1], sizes: [4, 4], strides: [2, 3] }],
  split: [{ input: f32(6, 2), splits: 3 }, { input: f32(2, 6), splits: [2, 4], axis: 1 }],
  pad: [{ input: f32(2, 3), beginningPadding: [1, 0], endingPadding: [0, 1] },
    { input: f32(3, 4), beginningPadding: [1, 2], endingPadding: [2, 1], mode: 'reflection' }],
  gather: [{ input: f32(3, 4), indices: i32(2) }, { input: f32(3, 4), indices: i32(2, 2), axis: 1 }],
  gatherElements: { input: f32(3, 4), indices: i32(2, 4) },
  gatherND: { input: f32(3, 4), indices: i32(2, 1) },
  scatterElements: { input: f32(3, 4), indices: i32(2, 4), updates: f32(2, 4) },
  scatterND: { input: f32(3, 4), indices: i32(2, 1), updates: f32(2, 4) },
  tile: { input: f32(2, 3), repetitions: [2, 1] },
  quantizeLinear: [{ input: f32(2, 4), scale: f32(1, 4), zeroPoint: u8(1, 4) },
    { input: f32(2, 4), scale: f32(2, 2), zeroPoint: i8(2, 2) }], // block-wise
  dequantizeLinear: { input: u8(2, 4), scale: f32(1, 4), zeroPoint: u8(1, 4) },
  // steps 2, batch 1, input size 3, hidden size 4, one direction
  gru: [{ input: f32(2, 1, 3), weight: f32(1, 12, 3), recurrentWeight: f32(1, 12, 4), steps: 2, hiddenSize: 4,
    bias: f32(1, 12), recurrentBias: f32(1, 12), initialHiddenState: f32(1, 1, 4) },
  { input: f32(2, 1, 3), weight: f32(2, 12, 3), recurrentWeight: f32(2, 12, 4), steps: 2, hiddenSize: 4,
    initialHiddenState: f32(2, 1, 4), direction: 'both', returnSequence: true }],
  gruCell: { input: f32(1, 3), weight: f32(12, 3), recurrentWeight: f32(12, 4), hiddenState: f32(1, 4), hiddenSize: 4,
    bias: f32(12), recurrentBias: f32(12) },
  lstm: [{ input: f32(2, 1, 3), weight: f32(1, 16, 3), recurrentWeight: f32(1, 16, 4), steps: 2, hiddenSize: 4,
    bias: f32(1, 16), recurrentBias: f32(1, 16), peepholeWeight: f32(1, 12), initialHiddenState: f32(1, 1, 4),
    initialCellState: f32(1, 1, 4) },
  { input: f32(2, 1, 3), weight: f32(2, 16, 3), recurrentWeight: f32(2, 16, 4), steps: 2, hiddenSize: 4,
    peepholeWeight: f32(2, 12), direction: 'both', returnSequence: true }],
  lstmCell: { input: f32(1, 3), weight: f32(16, 3), recurrentWeight: f32(16, 4), hiddenState: f32(1, 4),
    cellState: f32(1, 4), hiddenSize: 4, bias: f32(16), recurrentBias: f32(16), peepholeWeight: f32(12) },
};

/** The seeds of `op` ([{name: value}]) for its signature ({params, options}). */
function seedsOf(op, signature) {
  if (SEEDS[op]) return [SEEDS[op]].flat();
  const seed = {};
  for (const [p, type] of signature.params) {
    if (type !== 'MLOperand') throw new Error(`${op}: no seed, and its parameter ${p} is not an operand`);
    seed[p] = f32(2, 3);
  }
  return [seed];
}

module.exports = { SEEDS, seedsOf };
