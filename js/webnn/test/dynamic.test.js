'use strict';
// Dynamic dimensions (MLDynamicDimension {name, maxSize}) in navigator.ml: the builder's shape
// rules agree with Estuary's importer on calls with dynamic operands (the same output descriptors,
// derived dimensions in the same text, or both refuse), MLOperand.shape reports them, dispatch()
// checks concrete shapes, and one built graph runs at several sequence lengths, compared with
// onnxruntime (oracle.py) at each length.
const test = require('node:test');
const assert = require('node:assert/strict');
const { random, oracle, assertClose } = require('../test-support/helpers');
const { transformerWeights, buildTransformerBlock, D } = require('../test-support/models');
const { compare } = require('../test-support/agreement');

const S = { name: 'seq', maxSize: 64 };
const T = { name: 'len', maxSize: 64 };
const f32 = (shape) => ({ dataType: 'float32', shape });
const call = (inputs, op, ...args) => ({ inputs, op, args });
const x = (shape) => ({ input: f32(shape) });

// [case, expected verdict]: each is replayed through MLGraphBuilder and imported by Estuary
const CASES = [
  [call({ a: f32([1, S, 4]), b: f32([1, S, 4]) }, 'add', ['a', 'a'], ['b', 'b']), 'accepted'],
  [call({ a: f32([S, 4]), b: f32([T, 4]) }, 'add', ['a', 'a'], ['b', 'b']), 'accepted'],
  [call({ a: f32([S, 4]), b: f32([5, 4]) }, 'mul', ['a', 'a'], ['b', 'b']), 'accepted'],
  [call({ a: f32([S, 4]), b: f32([70, 4]) }, 'sub', ['a', 'a'], ['b', 'b']), 'refused'],
  [call({ a: f32([1, S, 8]), b: f32([8, 4]) }, 'matmul', ['a', 'a'], ['b', 'b']), 'accepted'],
  [call({ a: f32([1, S, 8]), b: f32([1, 8, S]) }, 'matmul', ['a', 'a'], ['b', 'b']), 'accepted'],
  [call({ a: f32([S, 8]), b: f32([T, 4]) }, 'matmul', ['a', 'a'], ['b', 'b']), 'accepted'],
  [call({ a: f32([S, 8]), b: f32([4, 8]) }, 'gemm', ['a', 'a'], ['b', 'b'], ['options', { bTranspose: true }]), 'accepted'],
  [call(x([1, S, 8]), 'reshape', ['input', 'input'], ['newShape', [1, { name: 'seq' }, 2, 4]]), 'accepted'],
  [call(x([1, S, 8]), 'reshape', ['input', 'input'], ['newShape', [{ expression: '8*seq' }]]), 'accepted'],
  [call(x([1, S, 8]), 'reshape', ['input', 'input'], ['newShape', [1, { expression: '2*seq' }, 4]]), 'accepted'],
  [call(x([1, S, 8]), 'reshape', ['input', 'input'], ['newShape', [1, { expression: 'seq' }, 4]]), 'refused'],
  [call(x([1, S, 8]), 'reshape', ['input', 'input'], ['newShape', [1, { name: 'len' }, 8]]), 'refused'],
  [call(x([S, 1, 4]), 'expand', ['input', 'input'], ['newShape', [{ name: 'seq' }, 3, 4]]), 'accepted'],
  [call(x([1, S, 8]), 'slice', ['input', 'input'], ['starts', [0, 1, 0]], ['sizes', [1, { expression: 'seq - 1' }, 8]]), 'accepted'],
  [call(x([1, S, 8]), 'slice', ['input', 'input'], ['starts', [0, 1, 0]], ['sizes', [1, { expression: 'seq - 1' }, 8]],
    ['options', { strides: [1, 2, 3] }]), 'accepted'],
  [call(x([1, S, 8]), 'slice', ['input', 'input'], ['starts', [0, 1, 0]], ['sizes', [1, { name: 'seq' }, 8]]), 'refused'],
  [call({ a: f32([1, S, 4]), b: f32([1, S, 4]) }, 'concat', ['inputs', ['a', 'b']], ['axis', 1]), 'accepted'],
  [call({ a: f32([S, 4]), b: f32([T, 4]) }, 'concat', ['inputs', ['a', 'b']], ['axis', 0]), 'accepted'],
  [call({ a: f32([S, 4]), b: f32([T, 2]) }, 'concat', ['inputs', ['a', 'b']], ['axis', 1]), 'accepted'],
  [call(x([1, S, 8]), 'transpose', ['input', 'input'], ['options', { permutation: [1, 2, 0] }]), 'accepted'],
  [call(x([1, S, 8]), 'softmax', ['input', 'input'], ['axis', 1]), 'accepted'],
  [call(x([1, S, 8]), 'reduceMean', ['input', 'input'], ['options', { axes: [1], keepDimensions: true }]), 'accepted'],
  [call(x([1, S, 8]), 'argMax', ['input', 'input'], ['axis', 1]), 'accepted'],
  [call({ input: f32([1, S, 8]), g: f32([8]) }, 'layerNormalization', ['input', 'input'], ['options', { axes: [2], scale: 'g' }]), 'accepted'],
  [call({ input: f32([S, 3, 4, 4]), m: f32([3]), v: f32([3]) }, 'batchNormalization', ['input', 'input'], ['mean', 'm'],
    ['variance', 'v']), 'accepted'],
  [call({ input: f32([1, 3, S, T]), w: f32([4, 3, 3, 3]) }, 'conv2d', ['input', 'input'], ['filter', 'w'],
    ['options', { padding: [1, 1, 1, 1], strides: [2, 2] }]), 'accepted'],
  [call({ input: f32([1, 3, S, 8]), w: f32([4, 3, 3, 3]) }, 'conv2d', ['input', 'input'], ['filter', 'w']), 'accepted'],
  [call({ input: f32([1, S, 4, 4]), w: f32([4, 3, 3, 3]) }, 'conv2d', ['input', 'input'], ['filter', 'w']), 'refused'],
  [call(x([1, 3, S, 8]), 'averagePool2d', ['input', 'input'], ['options', { windowDimensions: [2, 2], strides: [2, 2],
    roundingType: 'ceil' }]), 'accepted'],
  [call(x([1, 3, S, T]), 'maxPool2d', ['input', 'input']), 'accepted'],
  [call(x([1, 3, S, 8]), 'l2Pool2d', ['input', 'input'], ['options', { windowDimensions: [3, 3], dilations: [2, 1] }]), 'accepted'],
  [call({ input: f32([S, 4]), i: { dataType: 'int32', shape: [3] } }, 'gather', ['input', 'input'], ['indices', 'i']), 'accepted'],
  [call({ input: f32([4, 8]), i: { dataType: 'int32', shape: [S] } }, 'gather', ['input', 'input'], ['indices', 'i']), 'accepted'],
  [call({ input: f32([S, 4]), i: { dataType: 'int32', shape: [S, 2] } }, 'gatherElements', ['input', 'input'], ['indices', 'i'],
    ['options', { axis: 1 }]), 'accepted'],
  [call(x([S, 8]), 'split', ['input', 'input'], ['splits', 2], ['options', { axis: 1 }]), 'accepted'],
  [call(x([S, 8]), 'split', ['input', 'input'], ['splits', 2]), 'refused'],
  [call(x([S, 4]), 'pad', ['input', 'input'], ['beginningPadding', [1, 0]], ['endingPadding', [2, 0]]), 'accepted'],
  [call(x([S, 2]), 'tile', ['input', 'input'], ['repetitions', [3, 1]]), 'accepted'],
  [call({ c: { dataType: 'uint8', shape: [S, 1] }, a: f32([1, 4]), b: f32([S, 4]) }, 'where', ['condition', 'c'],
    ['trueValue', 'a'], ['falseValue', 'b']), 'accepted'],
  [call(x([S, S]), 'triangular', ['input', 'input']), 'accepted'],
  [call(x([S, 3]), 'cumulativeSum', ['input', 'input'], ['axis', 0]), 'accepted'],
  [call({ input: f32([S, 4]), slope: f32([4]) }, 'prelu', ['input', 'input'], ['slope', 'slope']), 'accepted'],
  [call({ input: f32([S, 2]), s: f32([1, 2]), z: { dataType: 'int8', shape: [1, 2] } }, 'quantizeLinear', ['input', 'input'],
    ['scale', 's'], ['zeroPoint', 'z']), 'accepted'],
  [call({ input: f32([S, 1, 2]), w: f32([1, 3, 2]), r: f32([1, 3, 1]) }, 'gru', ['input', 'input'], ['weight', 'w'],
    ['recurrentWeight', 'r'], ['steps', 1], ['hiddenSize', 1]), 'refused'],
  [call(x([1, 1, S, 4]), 'resample2d', ['input', 'input'], ['options', { scales: [2, 2] }]), 'refused'],
];

test('the builder infers dynamic shapes as Estuary does (the same text of derived dimensions)', async () => {
  const context = await navigator.ml.createContext();
  const wrong = [];
  for (const [c, expected] of CASES) {
    const { verdict, js, estuary } = await compare(context, c);
    if (verdict !== expected) wrong.push(`${c.op} ${JSON.stringify(c.inputs)}: expected ${expected}, got ${verdict}: js ${JSON.stringify(js)}, estuary ${JSON.stringify(estuary)}`);
  }
  context.destroy();
  assert.deepEqual(wrong, []);
});

test('MLOperand.shape reports symbols and derived dimensions, which shape arguments take back', async () => {
  const context = await navigator.ml.createContext();
  const b = new MLGraphBuilder(context);
  const input = b.input('x', f32([1, { name: 'seq', maxSize: 128 }, 16]));
  assert.deepEqual(input.shape, [1, { name: 'seq', maxSize: 128 }, 16]);
  assert.ok(Object.isFrozen(input.shape) && Object.isFrozen(input.shape[1]));
  const heads = b.reshape(input, [1, input.shape[1], 2, 8]);
  const flat = b.reshape(b.transpose(heads, { permutation: [0, 2, 1, 3] }), [1, { expression: '2*seq' }, 8]);
  assert.deepEqual(flat.shape, [1, { name: '2*seq', maxSize: 256 }, 8]);
  const back = b.reshape(flat, [flat.shape[1], 8]);
  assert.deepEqual(back.shape, [{ name: '2*seq', maxSize: 256 }, 8]);
  const graph = await b.build({ back });
  const input2 = await context.createTensor({ ...f32([1, 3, 16]), writable: true });
  const out = await context.createTensor({ ...f32([6, 8]), readable: true });
  const data = random(3)(48);
  context.writeTensor(input2, data);
  context.dispatch(graph, { x: input2 }, { back: out });
  const got = new Float32Array(await context.readTensor(out));
  // [1, 3, 2, 8] -> [1, 2, 3, 8]: row r of the result is position r % 3 of head r / 3
  for (let r = 0; r < 6; r++) {
    for (let c = 0; c < 8; c++) assert.equal(got[r * 8 + c], data[(r % 3) * 16 + Math.floor(r / 3) * 8 + c]);
  }
  context.destroy();
});

test('input(), constant() and operations validate dynamic dimensions with TypeErrors', async () => {
  const context = await navigator.ml.createContext();
  const b = new MLGraphBuilder(context);
  b.input('x', f32([1, { name: 'seq', maxSize: 128 }]));
  const throws = (fn, pattern) => assert.throws(fn, (e) => e instanceof TypeError && pattern.test(e.message), String(pattern));
  throws(() => b.input('y', f32([{ maxSize: 4 }])), /needs a name/);
  throws(() => b.input('y', f32([{ name: 'seq' }])), /needs a maxSize/);
  throws(() => b.input('y', f32([{ name: 'a b', maxSize: 4 }])), /'a b' is not an identifier/);
  throws(() => b.input('y', f32([{ name: 'n', maxSize: 0 }])), /maxSize of 'n' must be positive/);
  throws(() => b.input('y', f32([{ name: 'seq', maxSize: 64 }])), /'seq' has maxSize 64, but an earlier dimension gave it maxSize 128/);
  throws(() => b.input('y', f32([{ name: 'k', maxSize: 4 }, { name: 'k', maxSize: 5 }])), /'k' has maxSize 5/);
  throws(() => b.constant(f32([{ name: 'seq', maxSize: 128 }]), new Float32Array(1)), /only graph inputs take dynamic dimensions/);
  await assert.rejects(context.createTensor(f32([{ name: 'seq', maxSize: 4 }])), /only graph inputs take dynamic dimensions/);
  const seq = b.input('s', f32([{ name: 'seq', maxSize: 128 }, 1, 2]));
  const w = b.constant(f32([1, 3, 2]), new Float32Array(6));
  const r = b.constant(f32([1, 3, 1]), new Float32Array(3));
  throws(() => b.gru(seq, w, r, 1, 1), /^gru\(\): gru does not take dynamic dimensions: input has the shape \[seq,1,2\] \(seq=1\.\.128\)/);
  throws(() => b.reshape(seq, [{ name: 'len' }, 2]), /names 'len', which no input declares \(declared: seq\)/);
  throws(() => b.reshape(seq, [{ expression: 'seq * (' }, 2]), /cannot read dimension/);
  context.destroy();
});

test('dispatch() checks concrete shapes against the dynamic dimensions', async () => {
  const context = await navigator.ml.createContext();
  const b = new MLGraphBuilder(context);
  const a = b.input('a', f32([1, { name: 'seq', maxSize: 8 }]));
  const m = b.input('m', f32([1, { name: 'mlen', maxSize: 8 }]));
  const graph = await b.build({ y: b.add(a, m) }); // mlen is bound to seq
  const tensor = (n, usage = { writable: true }) => context.createTensor({ ...f32([1, n]), ...usage });
  const [t3, t4, t9, out3, out4] = await Promise.all([tensor(3), tensor(4), tensor(9), tensor(3, { readable: true }),
    tensor(4, { readable: true })]);
  context.writeTensor(t3, new Float32Array([1, 2, 3]));
  context.dispatch(graph, { a: t3, m: t3 }, { y: out3 });
  assert.deepEqual([...new Float32Array(await context.readTensor(out3))], [2, 4, 6]);
  const throws = (fn, pattern) => assert.throws(fn, (e) => e instanceof TypeError && pattern.test(e.message), String(pattern));
  throws(() => context.dispatch(graph, { a: t9, m: t9 }, { y: out3 }), /input 'a' dimension 1 \(seq\) is 9, outside its bounds 1\.\.8/);
  throws(() => context.dispatch(graph, { a: t3, m: t4 }, { y: out3 }), /mlen is 4, but the graph needs mlen = seq = 3/);
  throws(() => context.dispatch(graph, { a: t3, m: t3 }, { y: out4 }), /output 'y' is float32 \[1,4\], the graph needs float32 \[1,3\]/);
  await assert.rejects(context.compute(graph, { a: new Float32Array(3), m: new Float32Array(3) }, { y: new Float32Array(3) }),
    /compute\(\): the graph has dynamic dimensions/);
  context.destroy();
});

for (const heads of [1, 2]) {
  test(`a transformer block (${heads} head${heads > 1 ? 's' : ''}) built once runs at every length, as onnxruntime computes`, async () => {
    const context = await navigator.ml.createContext();
    const weights = transformerWeights();
    const graph = await buildTransformerBlock(context, weights, { name: 'seq', maxSize: 128 }, heads);
    for (const n of [1, 7, 64, 128]) {
      const input = { shape: [1, n, D], data: random(40 + n)(n * D, -2, 2) };
      const xt = await context.createTensor({ ...f32(input.shape), writable: true });
      const yt = await context.createTensor({ ...f32(input.shape), readable: true });
      context.writeTensor(xt, input.data);
      context.dispatch(graph, { x: xt }, { y: yt });
      const got = new Float32Array(await context.readTensor(yt));
      const model = heads === 1 ? 'transformer' : 'transformer_heads';
      const expected = oracle(model, { ...weights, x: input, heads: { shape: [1], data: [heads] } }).y;
      assertClose(got, expected, { rtol: 1e-4, atol: 1e-4 }, `y (seq = ${n})`);
    }
    context.destroy();
  });
}
