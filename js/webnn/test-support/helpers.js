'use strict';
// Shared by the tests: a seeded random source, the onnxruntime oracle, and closeness checks.
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const assert = require('node:assert/strict');
require('../register');

/** Deterministic uniform numbers in [lo, hi) (mulberry32), as float32 values. */
function random(seed) {
  let a = seed >>> 0;
  return (n, lo = -1, hi = 1) => Float32Array.from({ length: n }, () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return lo + (hi - lo) * (((t ^ (t >>> 14)) >>> 0) / 4294967296);
  });
}

function python() {
  return process.env.ESTUARY_PYTHON || path.resolve(__dirname, '..', '..', '..', '.venv', 'bin', 'python');
}

/** Outputs of `model` (a graph written independently in onnx.helper, run by onnxruntime) on `tensors`
 * ({name: {shape, data: Float32Array}}): {output name: Float64Array}. */
function oracle(model, tensors) {
  const request = { model, tensors: Object.fromEntries(Object.entries(tensors)
    .map(([k, v]) => [k, { shape: v.shape, data: Array.from(v.data) }])) };
  const r = spawnSync(python(), [path.join(__dirname, 'oracle.py')], { input: JSON.stringify(request), maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`oracle.py failed: ${r.stderr}`);
  return Object.fromEntries(Object.entries(JSON.parse(r.stdout)).map(([k, v]) => [k, Float64Array.from(v)]));
}

function assertClose(actual, expected, { rtol = 1e-4, atol = 1e-5 } = {}, what = 'output') {
  assert.equal(actual.length, expected.length, `${what}: ${actual.length} values, expected ${expected.length}`);
  for (let i = 0; i < actual.length; i++) {
    const a = Number(actual[i]);
    const e = Number(expected[i]);
    if (!(Math.abs(a - e) <= atol + rtol * Math.abs(e))) {
      assert.fail(`${what}[${i}] = ${a}, expected ${e} (rtol ${rtol}, atol ${atol})`);
    }
  }
}

module.exports = { random, oracle, assertClose };
