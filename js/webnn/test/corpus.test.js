'use strict';
// Every operation of Estuary's WebNN registry, replayed through the JS builder and Estuary's
// importer with the corpus of calls derived from its signature (test-support/corpus.js): each call
// must be accepted by both with the same output descriptors, or refused by both. The seeds of each
// operation must be accepted, and setting an option to its dictionary default must change neither
// the descriptors nor the module Estuary imports (so the registry's defaults are the ones Estuary
// computes with). ESTUARY_JS_CORPUS_OPS=a,b limits the operations, ESTUARY_JS_CORPUS_SHOW the
// problems shown (every one goes to the file ESTUARY_JS_CORPUS_REPORT names, a JSON line each).
const test = require('node:test');
const assert = require('node:assert/strict');
require('../test-support/helpers');
const { SIGNATURES } = require('../lib/webidl');
const { corpus } = require('../test-support/corpus');
const { seedsOf } = require('../test-support/seeds');
const { compare } = require('../test-support/agreement');

const only = process.env.ESTUARY_JS_CORPUS_OPS?.split(',');
const SHOW = Number(process.env.ESTUARY_JS_CORPUS_SHOW || 12);

test('every operation agrees with Estuary on its corpus of valid and invalid calls', async (t) => {
  const context = await navigator.ml.createContext();
  const problems = [];
  const counts = { operations: 0, calls: 0, accepted: 0, refused: 0, intended: 0 };
  for (const [op, sig] of Object.entries(SIGNATURES.operations)) {
    if (only && !only.includes(op)) continue;
    counts.operations++;
    const verdicts = {};
    const seeds = {}; // seed index -> its result
    for (const c of corpus(op, sig, seedsOf(op, sig))) {
      const r = await compare(context, c);
      counts.calls++;
      verdicts[r.verdict] = (verdicts[r.verdict] ?? 0) + 1;
      if (r.verdict !== 'disagree') counts[r.verdict]++;
      if (c.isSeed) seeds[c.seed] = r;
      if (r.verdict === 'disagree') problems.push({ op, what: c.what, js: r.js, estuary: r.estuary, case: c });
      else if (c.isSeed && r.verdict !== 'accepted') problems.push({ op, what: `${c.what} is refused`, js: r.js, case: c });
      else if (c.sameAs === 'seed' && (JSON.stringify(r.js) !== JSON.stringify(seeds[c.seed]?.js)
          || r.digest !== seeds[c.seed]?.digest)) { // the default given: the same descriptors and the same nn module
        problems.push({ op, what: `${c.what} changes the seed's result`, js: r.js, seed: seeds[c.seed]?.js });
      }
    }
    if (!verdicts.refused) problems.push({ op, what: 'no call of the corpus is refused' });
  }
  context.destroy();
  if (process.env.ESTUARY_JS_CORPUS_REPORT) {
    require('node:fs').writeFileSync(process.env.ESTUARY_JS_CORPUS_REPORT, problems.map((p) => `${JSON.stringify(p)}\n`).join(''));
  }
  const shown = problems.slice(0, SHOW).map((p) => JSON.stringify(p)).join('\n');
  assert.equal(problems.length, 0, `${problems.length} problem(s) in ${counts.calls} calls of ${counts.operations} `
    + `operations (accepted ${counts.accepted}, refused ${counts.refused}, intended differences `
    + `${counts.intended}):\n${shown}`);
  t.diagnostic(`corpus: ${JSON.stringify(counts)}`);
});
