'use strict';
// One source for the operations' signatures: lib/signatures.json is what Estuary's WebNN registry
// gives now (scripts/webnn_signatures.py --check), every operation of it has a shape rule in
// lib/ops.js and every rule an operation, each type converts, and MLGraphBuilder has exactly these
// methods. (test/corpus.test.js holds the rules themselves to the registry, call by call.)
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
require('../test-support/helpers');
const { SIGNATURES, convertible } = require('../lib/webidl');
const { OPS, RULES } = require('../lib/ops');

const ROOT = path.resolve(__dirname, '..', '..', '..');

test("lib/signatures.json is what Estuary's WebNN registry gives", () => {
  const python = process.env.ESTUARY_PYTHON || path.join(ROOT, '.venv', 'bin', 'python');
  const r = spawnSync(python, [path.join(ROOT, 'scripts', 'webnn_signatures.py'), '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `${r.stderr}${r.stdout}`);
});

test('every operation of the registry has a rule, and every rule an operation', () => {
  const operations = Object.keys(SIGNATURES.operations).sort();
  const rules = Object.keys(RULES).sort();
  assert.deepEqual(operations.filter((n) => !RULES[n]), [], 'operations without a rule in lib/ops.js');
  assert.deepEqual(rules.filter((n) => !SIGNATURES.operations[n]), [], 'rules of no operation of the registry');
  assert.deepEqual(Object.keys(OPS).sort(), operations);
});

test('every parameter and option type converts', () => {
  const types = new Set(Object.values(SIGNATURES.operations).flatMap(({ params, options }) => [
    ...params.map(([, type]) => type), ...Object.values(options ?? {}).map(({ type }) => type)]));
  const operand = (type) => type === 'MLOperand' || type === 'sequence<MLOperand>';
  assert.deepEqual([...types].filter((t) => !operand(t) && !convertible(t)), []);
});

test('MLGraphBuilder has a method for each operation, and no other', () => {
  const methods = Object.getOwnPropertyNames(MLGraphBuilder.prototype)
    .filter((n) => !['constructor', 'input', 'constant', 'build'].includes(n) && !n.startsWith('_'));
  assert.deepEqual(methods.sort(), Object.keys(SIGNATURES.operations).sort());
});
