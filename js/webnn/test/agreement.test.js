'use strict';
// The JS builder's validation and output shapes agree with Estuary's importer: random calls of
// every operation (test-support/cases.js), each replayed through MLGraphBuilder as the
// web-platform-tests runner does and imported by the worker ("check": import and verify, no
// compile). A call must be accepted by both with the same output descriptors, or refused by both.
const test = require('node:test');
const assert = require('node:assert/strict');
require('../test-support/helpers');
const { getBridge } = require('../lib/bridge');
const { OPS } = require('../lib/ops');
const { generator, makeCase } = require('../test-support/cases');

const PER_OP = Number(process.env.ESTUARY_JS_AGREEMENT_CASES || 10);
const SEED = Number(process.env.ESTUARY_JS_AGREEMENT_SEED || 2026);

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
    const found = (await getBridge().request({ op: 'check', graph: doc })).header.outputs;
    return { outputs: Object.fromEntries(Object.entries(found).map(([k, d]) => [k, { dataType: d.dataType, shape: d.shape }])) };
  } catch (e) {
    return { error: e.message };
  }
}

// Where the current spec is stricter than Estuary's importer, JS refuses (as a browser must) and
// Estuary would compute: these differences are intended.
const STRICTER_SPEC = [
  // webmachinelearning/webnn#843: reflection padding smaller than the dimension; no scalar input
  (c, js) => c.op === 'pad' && /reflection padding must be smaller|takes rank 1 to/.test(js),
  // scale and zeroPoint of the input's rank (Estuary also broadcasts a lower rank, numpy-style)
  (c, js) => /quantizeLinear/.test(c.op) && /must have the rank of input/.test(js),
];

/** How many operands a call returns (split: one per piece; gru, lstm: 1 or 2, plus the sequence). */
function resultCount(c) {
  const arg = (p) => c.args.find(([k]) => k === p)?.[1];
  const options = arg('options') || {};
  if (c.op === 'split') return Array.isArray(arg('splits')) ? arg('splits').length : arg('splits');
  if (c.op === 'gru') return options.returnSequence ? 2 : 1;
  if (c.op === 'lstm') return options.returnSequence ? 3 : 2;
  if (c.op === 'lstmCell') return 2;
  return 1;
}

test('MLGraphBuilder validates and infers shapes as Estuary does, for every operation', async () => {
  const context = await navigator.ml.createContext();
  const g = generator(SEED);
  const disagreements = [];
  let accepted = 0;
  let refused = 0;
  const only = process.env.ESTUARY_JS_AGREEMENT_OPS?.split(',');
  for (const op of Object.keys(OPS).filter((o) => !only || only.includes(o))) {
    for (let i = 0; i < PER_OP; i++) {
      const c = makeCase(op, g);
      let js;
      try {
        js = { outputs: replay(new MLGraphBuilder(context), c).map((o) => ({ dataType: o.dataType, shape: [...o.shape] })) };
      } catch (e) {
        assert.ok(e instanceof TypeError, `${op}: ${e.name}: ${e.message}`);
        js = { error: e.message };
      }
      // the importer needs as many output names as the call has results
      const count = js.outputs ? js.outputs.length : resultCount(c);
      const py = await python(c, Array.from({ length: count }, (_, k) => `out${k}`));
      const pyOutputs = py.outputs && Object.values(py.outputs);
      if (js.error && py.error) refused++;
      else if (js.error && STRICTER_SPEC.some((f) => f(c, js.error))) refused++;
      else if (js.outputs && pyOutputs && JSON.stringify(js.outputs) === JSON.stringify(pyOutputs)) accepted++;
      else disagreements.push({ case: c, js: js.error ?? js.outputs, estuary: py.error ?? pyOutputs });
    }
  }
  context.destroy();
  const report = disagreements.slice(0, Number(process.env.ESTUARY_JS_AGREEMENT_SHOW || 8)).map((d) => JSON.stringify(d)).join('\n');
  assert.equal(disagreements.length, 0, `${disagreements.length} disagreement(s) (accepted ${accepted}, refused ${refused}):\n${report}`);
  assert.ok(accepted > refused, `accepted ${accepted}, refused ${refused}: the cases should be mostly valid`);
});
