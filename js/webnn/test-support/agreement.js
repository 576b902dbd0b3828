'use strict';
// One call of an operation, replayed through MLGraphBuilder as the web-platform-tests runner does
// and imported by the Estuary worker ("check": import and verify, no compile): both must accept it
// with the same output descriptors, or both refuse it. Used by test/agreement.test.js (random
// calls of every operation) and test/dynamic.test.js (calls with dynamic dimensions).
// A case: {inputs: {name: descriptor}, op, args: [[parameter, value]]} (operands by input name).
const assert = require('node:assert/strict');
const { getBridge } = require('../lib/bridge');
const { MLGraphBuilder } = require('../lib/api');

function replay(builder, c) {
  const operands = Object.fromEntries(Object.entries(c.inputs).map(([n, d]) => [n, builder.input(n, d)]));
  const resolve = (v) => (typeof v === 'string' && v in operands ? operands[v] : Array.isArray(v) ? v.map(resolve) : v);
  const args = c.args.map(([p, v]) => (p === 'options'
    ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x)])) : resolve(v)));
  const result = builder[c.op](...args);
  return Array.isArray(result) ? result : [result];
}

async function python(c, outputs) {
  const doc = { inputs: Object.fromEntries(Object.entries(c.inputs).map(([n, d]) => [n, { descriptor: d }])),
    operators: [{ name: c.op, arguments: c.args.map(([p, v]) => ({ [p]: v })), outputs: outputs.length === 1 ? outputs[0] : outputs }],
    outputs };
  try {
    const { outputs: found, digest } = (await getBridge().request({ op: 'check', graph: doc })).header;
    return { outputs: Object.fromEntries(Object.entries(found).map(([k, d]) => [k, { dataType: d.dataType, shape: d.shape }])),
      digest };
  } catch (e) {
    return { error: e.message };
  }
}

// The intended differences. Where the current spec is stricter than Estuary's importer, JS refuses
// (as a browser must) and Estuary would compute:
const STRICTER_SPEC = [
  // webmachinelearning/webnn#843: reflection padding smaller than the dimension; no scalar input
  (c, js) => c.op === 'pad' && /reflection padding must be smaller|takes rank 1 to/.test(js),
  // scale and zeroPoint of the input's rank (Estuary also broadcasts a lower rank, numpy-style)
  (c, js) => /quantizeLinear/.test(c.op) && /must have the rank of input/.test(js),
];
// Where the spec accepts a call Estuary cannot compute, JS accepts it (as a browser does) and
// build() fails with Estuary's error:
const STRICTER_ESTUARY = [
  // convTranspose2d's steps do not ask the input channels to divide into the groups (the
  // web-platform-tests' "[convTranspose2d] Test with padding=1, groups=3" expects [1, 1, 5, 5] to
  // give 3 channels); Estuary's conv_transpose2d splits the input channels into the groups
  (c, js, estuary) => c.op === 'convTranspose2d' && /are not divisible by groups/.test(estuary),
];

/** How many operands a call returns (split: one per piece; gru, lstm: 1 or 2, plus the sequence). */
function resultCount(c) {
  const arg = (p) => c.args.find(([k]) => k === p)?.[1];
  const options = arg('options') || {};
  if (c.op === 'split') { // a call JS refused may have any splits: a count Estuary can refuse the call with
    const splits = arg('splits');
    const count = Array.isArray(splits) ? splits.length : splits;
    return Number.isInteger(count) && count >= 1 && count <= 64 ? count : 1;
  }
  if (c.op === 'gru') return options.returnSequence ? 2 : 1;
  if (c.op === 'lstm') return options.returnSequence ? 3 : 2;
  if (c.op === 'lstmCell') return 2;
  return 1;
}

/** Replay case `c` on both sides: {verdict: 'accepted' | 'refused' | 'intended' (an intended
 * difference) | 'disagree', js, estuary, digest (of the module Estuary imported: equal digests
 * compute alike)}. */
async function compare(context, c) {
  let js;
  try {
    js = { outputs: replay(new MLGraphBuilder(context), c).map((o) => ({ dataType: o.dataType, shape: [...o.shape] })) };
  } catch (e) {
    assert.ok(e instanceof TypeError, `${c.op}: ${e.name}: ${e.message}`);
    js = { error: e.message };
  }
  // the importer needs as many output names as the call has results
  const count = js.outputs ? js.outputs.length : resultCount(c);
  const py = await python(c, Array.from({ length: count }, (_, k) => `out${k}`));
  const pyOutputs = py.outputs && Object.values(py.outputs);
  let verdict = 'disagree';
  if (js.error && py.error) verdict = 'refused';
  else if (js.outputs && pyOutputs && JSON.stringify(js.outputs) === JSON.stringify(pyOutputs)) verdict = 'accepted';
  else if (js.error && STRICTER_SPEC.some((f) => f(c, js.error))) verdict = 'intended';
  else if (py.error && STRICTER_ESTUARY.some((f) => f(c, js.outputs, py.error))) verdict = 'intended';
  return { verdict, js: js.error ?? js.outputs, estuary: py.error ?? pyOutputs, digest: py.digest };
}

module.exports = { compare };
