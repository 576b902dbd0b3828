'use strict';
// The two models of the tests and benchmarks, written as a browser WebNN sample writes them
// (navigator.ml globals from register.js); random weights from a fixed seed.
const { random } = require('./helpers');

const f32 = (shape) => ({ dataType: 'float32', shape });

// ---------------------------------------------------------------- MobileNet-style classifier

function mobilenetWeights() {
  const r = random(7);
  const w = (shape, lo, hi) => ({ shape, data: r(shape.reduce((a, b) => a * b, 1), lo, hi) });
  return {
    w1: w([8, 3, 3, 3], -0.5, 0.5), b1: w([8]), bn_mean: w([8], -0.2, 0.2), bn_var: w([8], 0.5, 1.5),
    bn_scale: w([8], 0.5, 1.5), bn_bias: w([8], -0.2, 0.2), wd: w([8, 1, 3, 3], -0.5, 0.5), bd: w([8], -0.1, 0.1),
    wp: w([16, 8, 1, 1], -0.5, 0.5), fc_w: w([16, 10], -1, 1), fc_b: w([10], -0.1, 0.1),
  };
}

async function buildMobileNet(context, weights) {
  const builder = new MLGraphBuilder(context);
  const c = (name) => builder.constant(f32(weights[name].shape), weights[name].data);
  const input = builder.input('x', f32([1, 3, 16, 16]));
  let h = builder.conv2d(input, c('w1'), { bias: c('b1'), padding: [1, 1, 1, 1], strides: [2, 2] });
  h = builder.batchNormalization(h, c('bn_mean'), c('bn_var'), { scale: c('bn_scale'), bias: c('bn_bias'), epsilon: 1e-5 });
  const stem = builder.clamp(h, { minValue: 0, maxValue: 6 });
  h = builder.conv2d(stem, c('wd'), { bias: c('bd'), padding: [1, 1, 1, 1], groups: 8, label: 'depthwise' });
  h = builder.relu(builder.add(h, stem));
  h = builder.relu(builder.conv2d(h, c('wp')));
  h = builder.averagePool2d(h); // global: the window defaults to the whole 8x8 map
  h = builder.reshape(h, [1, 16]);
  const logits = builder.gemm(h, c('fc_w'), { c: c('fc_b') });
  return builder.build({ probs: builder.softmax(logits, 1) });
}

// ---------------------------------------------------------------- transformer block

const SEQ = 8;
const D = 16;
const HIDDEN = 32;

function transformerWeights() {
  const r = random(21);
  const w = (shape, lo = -0.3, hi = 0.3) => ({ shape, data: r(shape.reduce((a, b) => a * b, 1), lo, hi) });
  return {
    ln1_g: w([D], 0.8, 1.2), ln1_b: w([D], -0.1, 0.1), wq: w([D, D]), bq: w([D]), wk: w([D, D]), bk: w([D]),
    wv: w([D, D]), bv: w([D]), wo: w([D, D]), bo: w([D]), ln2_g: w([D], 0.8, 1.2), ln2_b: w([D], -0.1, 0.1),
    w_up: w([D, HIDDEN]), b_up: w([HIDDEN]), w_down: w([HIDDEN, D]), b_down: w([D]),
  };
}

/** The block; `seq` is the sequence length, a number or an MLDynamicDimension {name, maxSize};
 * with `heads` > 1 attention is split into heads (reshape to [1, seq, heads, D / heads] with the
 * input's own shape entry, transpose) and merged back, as oracle.py's transformer_heads. */
async function buildTransformerBlock(context, weights, seq = SEQ, heads = 1) {
  const builder = new MLGraphBuilder(context);
  const c = (name) => builder.constant(f32(weights[name].shape), weights[name].data);
  const layerNorm = (v, g, b) => builder.layerNormalization(v, { axes: [2], scale: c(g), bias: c(b), epsilon: 1e-5 });
  const linear = (v, w, b) => builder.add(builder.matmul(v, c(w)), c(b));
  const x = builder.input('x', f32([1, seq, D]));
  const dh = D / heads;
  const split = (v) => (heads === 1 ? v
    : builder.transpose(builder.reshape(v, [1, x.shape[1], heads, dh]), { permutation: [0, 2, 1, 3] }));
  const h = layerNorm(x, 'ln1_g', 'ln1_b');
  const q = split(linear(h, 'wq', 'bq'));
  const k = split(linear(h, 'wk', 'bk'));
  const v = split(linear(h, 'wv', 'bv'));
  const last = heads === 1 ? 2 : 3;
  const kt = builder.transpose(k, { permutation: heads === 1 ? [0, 2, 1] : [0, 1, 3, 2] });
  const scores = builder.mul(builder.matmul(q, kt), builder.constant('float32', 1 / Math.sqrt(dh)));
  let attention = builder.matmul(builder.softmax(scores, last), v);
  if (heads > 1) attention = builder.reshape(builder.transpose(attention, { permutation: [0, 2, 1, 3] }), [1, x.shape[1], D]);
  const y1 = builder.add(x, linear(attention, 'wo', 'bo'));
  const up = builder.gelu(linear(layerNorm(y1, 'ln2_g', 'ln2_b'), 'w_up', 'b_up'));
  const y = builder.add(y1, linear(up, 'w_down', 'b_down'));
  return builder.build({ y });
}

module.exports = { mobilenetWeights, buildMobileNet, transformerWeights, buildTransformerBlock, SEQ, D };
