'use strict';
// The JS builder's validation and output shapes agree with Estuary's importer: random calls of
// every operation (test-support/cases.js), each replayed through MLGraphBuilder as the
// web-platform-tests runner does and imported by the worker ("check": import and verify, no
// compile). A call must be accepted by both with the same output descriptors, or refused by both.
const test = require('node:test');
const assert = require('node:assert/strict');
require('../test-support/helpers');
const { OPS } = require('../lib/ops');
const { generator, makeCase } = require('../test-support/cases');
const { compare } = require('../test-support/agreement');

const PER_OP = Number(process.env.ESTUARY_JS_AGREEMENT_CASES || 10);
const SEED = Number(process.env.ESTUARY_JS_AGREEMENT_SEED || 2026);

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
      const { verdict, js, estuary } = await compare(context, c);
      if (verdict === 'accepted') accepted++;
      else if (verdict === 'refused') refused++;
      else if (verdict === 'disagree') disagreements.push({ case: c, js, estuary });
    }
  }
  context.destroy();
  const report = disagreements.slice(0, Number(process.env.ESTUARY_JS_AGREEMENT_SHOW || 8)).map((d) => JSON.stringify(d)).join('\n');
  assert.equal(disagreements.length, 0, `${disagreements.length} disagreement(s) (accepted ${accepted}, refused ${refused}):\n${report}`);
  assert.ok(accepted > refused, `accepted ${accepted}, refused ${refused}: the cases should be mostly valid`);
});
