'use strict';
// The MLTensor execution model through the worker: tensors stay in the worker between
// dispatches, constant tensors, BYOB reads, 64-bit integers, several outputs; options reach
// Estuary (references computed here in float64 by the spec's formulas).
const test = require('node:test');
const assert = require('node:assert/strict');
const { random, assertClose } = require('../test-support/helpers');

const f32 = (shape) => ({ dataType: 'float32', shape });
let context;
test.before(async () => { context = await navigator.ml.createContext(); });
test.after(() => context.destroy());

test('dispatch chains on tensors that stay in the worker; constant tensors; BYOB reads', async () => {
  const weights = await context.createConstantTensor(f32([4]), new Float32Array([1, -2, 3, -4]));
  const b = new MLGraphBuilder(context);
  const x = b.input('x', f32([4]));
  const y = b.add(b.mul(x, b.constant(weights)), b.constant('float32', 0.5)); // y = x * w + 0.5
  const graph = await b.build({ y });
  const t0 = await context.createTensor({ ...f32([4]), writable: true, readable: true });
  const t1 = await context.createTensor({ ...f32([4]), readable: true, writable: true });
  context.writeTensor(t0, new Float32Array([1, 2, 3, 4]));
  context.dispatch(graph, { x: t0 }, { y: t1 }); // t1 = [1.5, -3.5, 9.5, -15.5]
  context.dispatch(graph, { x: t1 }, { y: t0 }); // t0 = [2, 7.5, 29, 62.5]
  const out = new Float32Array(4);
  assert.equal(await context.readTensor(t0, out), undefined);
  assert.deepEqual([...out], [2, 7.5, 29, 62.5]);
  const raw = await context.readTensor(t1);
  assert.ok(raw instanceof ArrayBuffer);
  assert.deepEqual([...new Float32Array(raw)], [1.5, -3.5, 9.5, -15.5]);
  // writeTensor copies: changing the source afterwards changes nothing
  const src = new Float32Array([0, 0, 0, 1]);
  context.writeTensor(t0, src);
  src[3] = 100;
  context.dispatch(graph, { x: t0 }, { y: t1 });
  assert.deepEqual([...new Float32Array(await context.readTensor(t1))], [0.5, 0.5, 0.5, -3.5]);
});

test('int64 tensors carry BigInt64Array data', async () => {
  const b = new MLGraphBuilder(context);
  const x = b.input('x', { dataType: 'int32', shape: [3] });
  const big = b.constant({ dataType: 'int64', shape: [3] }, new BigInt64Array([2n ** 40n, -(2n ** 35n), 7n]));
  const y = b.add(b.cast(x, 'int64'), big);
  const graph = await b.build({ y });
  const xt = await context.createTensor({ dataType: 'int32', shape: [3], writable: true });
  const yt = await context.createTensor({ dataType: 'int64', shape: [3], readable: true });
  context.writeTensor(xt, new Int32Array([1, -2, 2 ** 31 - 1]));
  context.dispatch(graph, { x: xt }, { y: yt });
  assert.deepEqual([...new BigInt64Array(await context.readTensor(yt))], [2n ** 40n + 1n, -(2n ** 35n) - 2n, 7n + 2n ** 31n - 1n]);
});

test('several outputs, one operand under two names, and inputs the outputs do not need', async () => {
  const b = new MLGraphBuilder(context);
  const x = b.input('x', f32([2, 4]));
  b.input('unused', f32([1]));
  const [lo, hi] = b.split(x, 2, { axis: 1 });
  const s = b.sub(hi, lo);
  const graph = await b.build({ s, t: s, lo });
  const xt = await context.createTensor({ ...f32([2, 4]), writable: true });
  const outs = {};
  for (const [n, shape] of [['s', [2, 2]], ['t', [2, 2]], ['lo', [2, 2]]]) {
    outs[n] = await context.createTensor({ ...f32(shape), readable: true });
  }
  context.writeTensor(xt, new Float32Array([1, 2, 4, 8, 3, 5, 10, 20]));
  assert.throws(() => context.dispatch(graph, { x: xt, unused: xt }, outs), TypeError);
  context.dispatch(graph, { x: xt }, outs);
  assert.deepEqual([...new Float32Array(await context.readTensor(outs.s))], [3, 6, 7, 15]);
  assert.deepEqual([...new Float32Array(await context.readTensor(outs.t))], [3, 6, 7, 15]);
  assert.deepEqual([...new Float32Array(await context.readTensor(outs.lo))], [1, 2, 3, 5]);
});

/** conv2d in float64 by its definition, NHWC input and OHWI filter, then max pooling. */
function reference(x, [n, h, w, c], f, [o, kh, kw], bias, { pad, stride }, pool) {
  const oh = Math.floor((h + pad[0] + pad[1] - kh) / stride[0]) + 1;
  const ow = Math.floor((w + pad[2] + pad[3] - kw) / stride[1]) + 1;
  const conv = new Float64Array(n * oh * ow * o);
  for (let b = 0; b < n; b++) for (let i = 0; i < oh; i++) for (let j = 0; j < ow; j++) for (let k = 0; k < o; k++) {
    let acc = bias[k];
    for (let di = 0; di < kh; di++) for (let dj = 0; dj < kw; dj++) {
      const y = i * stride[0] - pad[0] + di;
      const z = j * stride[1] - pad[2] + dj;
      if (y < 0 || y >= h || z < 0 || z >= w) continue;
      for (let ch = 0; ch < c; ch++) acc += x[((b * h + y) * w + z) * c + ch] * f[((k * kh + di) * kw + dj) * c + ch];
    }
    conv[((b * oh + i) * ow + j) * o + k] = acc;
  }
  const ph = Math.floor((oh - pool) / pool) + 1;
  const pw = Math.floor((ow - pool) / pool) + 1;
  const out = new Float64Array(n * ph * pw * o).fill(-Infinity);
  for (let b = 0; b < n; b++) for (let i = 0; i < ph; i++) for (let j = 0; j < pw; j++) for (let k = 0; k < o; k++) {
    for (let di = 0; di < pool; di++) for (let dj = 0; dj < pool; dj++) {
      const v = conv[((b * oh + i * pool + di) * ow + j * pool + dj) * o + k];
      const at = ((b * ph + i) * pw + j) * o + k;
      out[at] = Math.max(out[at], v);
    }
  }
  return { out, shape: [n, ph, pw, o] };
}

test('layout, padding and stride options reach Estuary (NHWC conv2d + maxPool2d vs float64)', async () => {
  const r = random(5);
  const x = r(1 * 9 * 9 * 3);
  const f = r(5 * 3 * 3 * 3);
  const bias = r(5);
  const b = new MLGraphBuilder(context);
  const input = b.input('x', f32([1, 9, 9, 3]));
  const conv = b.conv2d(input, b.constant(f32([5, 3, 3, 3]), f), { inputLayout: 'nhwc', filterLayout: 'ohwi',
    padding: [1, 0, 0, 1], strides: [2, 1], bias: b.constant(f32([5]), bias) });
  assert.deepEqual([...conv.shape], [1, 4, 8, 5]);
  const y = b.maxPool2d(conv, { layout: 'nhwc', windowDimensions: [2, 2], strides: [2, 2] });
  const expected = reference(x, [1, 9, 9, 3], f, [5, 3, 3], bias, { pad: [1, 0, 0, 1], stride: [2, 1] }, 2);
  assert.deepEqual([...y.shape], expected.shape);
  const graph = await b.build({ y });
  const xt = await context.createTensor({ ...f32([1, 9, 9, 3]), writable: true });
  const yt = await context.createTensor({ ...f32(expected.shape), readable: true });
  context.writeTensor(xt, x);
  context.dispatch(graph, { x: xt }, { y: yt });
  assertClose(new Float32Array(await context.readTensor(yt)), expected.out, { rtol: 1e-5, atol: 1e-6 });
});

test("the earlier spec's compute() still runs, through temporary tensors", async () => {
  const b = new MLGraphBuilder(context);
  const y = b.mul(b.input('x', f32([3])), b.constant(f32([3]), new Float32Array([2, 3, 4])));
  const graph = await b.build({ y });
  const out = new Float32Array(3);
  const result = await context.compute(graph, { x: new Float32Array([1, -1, 0.5]) }, { y: out });
  assert.equal(result.outputs.y, out);
  assert.deepEqual([...out], [2, -3, 2]);
  await assert.rejects(context.compute(graph, { x: new Float32Array(2) }, { y: out }), TypeError);
});

test('an output may share its name with an input, as in a browser', async () => {
  const b = new MLGraphBuilder(context);
  const graph = await b.build({ x: b.neg(b.input('x', f32([2]))) });
  const xin = await context.createTensor({ ...f32([2]), writable: true });
  const xout = await context.createTensor({ ...f32([2]), readable: true });
  context.writeTensor(xin, new Float32Array([1.5, -2]));
  context.dispatch(graph, { x: xin }, { x: xout });
  assert.deepEqual([...new Float32Array(await context.readTensor(xout))], [-1.5, 2]);
});

test('int4 constants, packed two to a byte, reach Estuary one value per byte', async () => {
  const c = await navigator.ml.createContext();
  const limits = c.opSupportLimits();
  for (const type of ['int4', 'uint4']) {
    assert.ok(limits.constant.dataTypes.includes(type), `constant ${type}`);
    assert.ok(!limits.input.dataTypes.includes(type), `input ${type}`);
    assert.ok(limits.dequantizeLinear.input.dataTypes.includes(type), `dequantizeLinear ${type}`);
  }
  const b = new MLGraphBuilder(c);
  const x = b.constant({ dataType: 'int4', shape: [3] }, new Uint8Array([0x21, 0x03])); // 1, 2, 3
  const zeroPoint = b.constant({ dataType: 'int4', shape: [3] }, new Uint8Array([0x8f, 0x07])); // -1, -8, 7
  const scale = b.constant(f32([3]), new Float32Array([1, 0.5, 2]));
  const y = b.add(b.dequantizeLinear(x, scale, zeroPoint), b.input('i', f32([3])));
  const graph = await b.build({ y });
  const out = new Float32Array(3);
  await c.compute(graph, { i: new Float32Array([0, 0, 0.25]) }, { y: out });
  // (x - zeroPoint) * scale + i
  assert.deepEqual([...out], [2, 5, -7.75]);
  c.destroy();
});
