'use strict';
// The browser-style programs of examples/ run unmodified (node --require register.js) and print
// their outputs; onnxruntime runs the same networks, built independently with onnx.helper
// (oracle.py), on the same seeded weights, regenerated here in the examples' order.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { random, oracle, assertClose } = require('../test-support/helpers');

const root = path.resolve(__dirname, '..');

function runExample(name) {
  const r = spawnSync(process.execPath, ['--require', path.join(root, 'register.js'), path.join(root, 'examples', name)],
    { maxBuffer: 1 << 24 });
  assert.equal(r.status, 0, `${name}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** data of `shape` with its axes permuted: result axis i is input axis perm[i]. */
function transpose({ shape, data }, perm) {
  const out = perm.map((p) => shape[p]);
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  const result = new Float32Array(data.length);
  const index = new Array(out.length).fill(0);
  for (let i = 0; i < data.length; i++) {
    result[i] = data[index.reduce((s, v, k) => s + v * strides[perm[k]], 0)];
    for (let k = out.length - 1; k >= 0 && ++index[k] === out[k]; k--) index[k] = 0;
  }
  return { shape: out, data: result };
}

/** {name: {shape, data}} drawn from `seed` in the order of `spec` ([name, shape, lo, hi] rows). */
function weights(seed, spec) {
  const r = random(seed);
  return Object.fromEntries(spec.map(([name, shape, lo, hi]) =>
    [name, { shape, data: r(shape.reduce((a, b) => a * b, 1), lo, hi) }]));
}

test('examples/mobilenet.js (NHWC) matches onnxruntime', () => {
  const w = weights(7, [
    ['w1', [8, 3, 3, 3], -0.5, 0.5], ['b1', [8], -1, 1], ['bn_mean', [8], -0.2, 0.2], ['bn_var', [8], 0.5, 1.5],
    ['bn_scale', [8], 0.5, 1.5], ['bn_bias', [8], -0.2, 0.2], ['wd', [1, 3, 3, 8], -0.5, 0.5], ['bd', [8], -0.1, 0.1],
    ['wp', [16, 1, 1, 8], -0.5, 0.5], ['fc_w', [16, 10], -1, 1], ['fc_b', [10], -0.1, 0.1],
  ]);
  const image = { shape: [1, 16, 16, 3], data: random(11)(16 * 16 * 3) };
  // the ONNX network is NCHW with OIHW filters
  const expected = oracle('mobilenet', {
    ...w, x: transpose(image, [0, 3, 1, 2]), w1: transpose(w.w1, [0, 3, 1, 2]),
    wd: transpose(w.wd, [3, 0, 1, 2]), wp: transpose(w.wp, [0, 3, 1, 2]),
  });
  const got = runExample('mobilenet.js');
  assertClose(got.probs, expected.probs, { rtol: 1e-4, atol: 1e-6 }, 'probs');
});

test('examples/transformer-block.js (two heads, erf GELU) matches onnxruntime', () => {
  const D = 16;
  const names = ['ln1_g', 'ln1_b', 'wq', 'bq', 'wk', 'bk', 'wv', 'bv', 'wo', 'bo', 'ln2_g', 'ln2_b', 'w_up', 'b_up', 'w_down', 'b_down'];
  const shapes = [[D], [D], [D, D], [D], [D, D], [D], [D, D], [D], [D, D], [D], [D], [D], [D, 32], [32], [32, D], [D]];
  const ranges = (name) => (/^ln._g$/.test(name) ? [0.8, 1.2] : /^ln._b$/.test(name) ? [-0.1, 0.1] : [-0.3, 0.3]);
  const w = weights(21, names.map((n, i) => [n, shapes[i], ...ranges(n)]));
  const x = { shape: [1, 8, D], data: random(31)(8 * D, -2, 2) };
  const expected = oracle('transformer_heads', { ...w, x, heads: { shape: [1], data: [2] } });
  const got = runExample('transformer-block.js');
  assertClose(got.y, expected.y, { rtol: 1e-4, atol: 1e-5 }, 'y');
});
