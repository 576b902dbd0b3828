'use strict';
// The two ways in: `node --require register.js program.js` (a browser program, unmodified) and
// `require('@estuary/webnn')` (no globals touched).
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

test('node --require register.js runs a browser WebNN program', () => {
  const r = spawnSync(process.execPath, ['--require', path.join(root, 'register.js'), path.join(root, 'examples', 'gemm-relu.js')]);
  assert.equal(r.status, 0, String(r.stderr));
  // relu([1 2 3; -1 0 1] [1 -1; 2 0; -3 1] + [0.5 -0.5]) = relu([-3.5 1.5; -3.5 1.5])
  assert.deepEqual(JSON.parse(r.stdout), [0, 1.5, 0, 1.5]);
});

test('importing the package leaves the globals alone', () => {
  const script = `
    const webnn = require(${JSON.stringify(root)});
    if (typeof navigator !== 'undefined' && navigator.ml) throw new Error('navigator.ml was installed');
    if (typeof MLGraphBuilder !== 'undefined') throw new Error('MLGraphBuilder was installed');
    webnn.ml.createContext().then(async (context) => {
      const b = new webnn.MLGraphBuilder(context);
      const graph = await b.build({ y: b.neg(b.input('x', { dataType: 'int32', shape: [2] })) });
      const x = await context.createTensor({ dataType: 'int32', shape: [2], writable: true });
      const y = await context.createTensor({ dataType: 'int32', shape: [2], readable: true });
      context.writeTensor(x, new Int32Array([5, -7]));
      context.dispatch(graph, { x }, { y });
      console.log(JSON.stringify(Array.from(new Int32Array(await context.readTensor(y)))));
    });`;
  const r = spawnSync(process.execPath, ['-e', script]);
  assert.equal(r.status, 0, String(r.stderr));
  assert.deepEqual(JSON.parse(r.stdout), [-5, 7]);
});
