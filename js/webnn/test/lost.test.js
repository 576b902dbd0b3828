'use strict';
// When the worker dies: pending requests reject, every context's `lost` resolves, the contexts
// refuse further use, and the next createContext() starts a new worker.
const test = require('node:test');
const assert = require('node:assert/strict');
require('../test-support/helpers');
const { getBridge } = require('../lib/bridge');

test('a dead worker loses its contexts; a new context gets a new worker', async () => {
  const context = await navigator.ml.createContext();
  const second = await navigator.ml.createContext();
  const destroyed = await navigator.ml.createContext();
  destroyed.destroy();
  assert.equal(getBridge().onLost.length, 2); // a destroyed context no longer listens
  const b = new MLGraphBuilder(context);
  const pending = b.build({ y: b.relu(b.input('x', { dataType: 'float32', shape: [2] })) });
  const first = getBridge();
  first.child.kill('SIGKILL');
  await assert.rejects(pending, (e) => e instanceof DOMException && e.name === 'OperationError');
  const info = await context.lost;
  assert.match(info.message, /worker exited/);
  assert.match((await second.lost).message, /worker exited/);
  assert.equal((await destroyed.lost).message, 'destroy() was called');
  await assert.rejects(context.createTensor({ dataType: 'float32', shape: [1] }), (e) => e.name === 'InvalidStateError');
  assert.throws(() => new MLGraphBuilder(context), (e) => e.name === 'InvalidStateError');

  const again = await navigator.ml.createContext();
  assert.notEqual(getBridge(), first);
  const t = await again.createTensor({ dataType: 'int32', shape: [2], readable: true, writable: true });
  again.writeTensor(t, new Int32Array([4, -9]));
  assert.deepEqual([...new Int32Array(await again.readTensor(t))], [4, -9]);
  again.destroy();
});
