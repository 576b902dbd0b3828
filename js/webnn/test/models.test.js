'use strict';
// Two models written as a browser WebNN sample writes them (navigator.ml, MLGraphBuilder,
// MLTensor, dispatch), run through Estuary, compared with onnxruntime running the same models
// built independently with onnx.helper (oracle.py).
const test = require('node:test');
const { random, oracle, assertClose } = require('../test-support/helpers');
const { mobilenetWeights, buildMobileNet, transformerWeights, buildTransformerBlock, SEQ, D } = require('../test-support/models');

const f32 = (shape) => ({ dataType: 'float32', shape });

async function run(context, graph, inputs, outputs) {
  const inTensors = {};
  for (const [name, { shape, data }] of Object.entries(inputs)) {
    inTensors[name] = await context.createTensor({ ...f32(shape), writable: true });
    context.writeTensor(inTensors[name], data);
  }
  const outTensors = {};
  for (const [name, shape] of Object.entries(outputs)) {
    outTensors[name] = await context.createTensor({ ...f32(shape), readable: true });
  }
  context.dispatch(graph, inTensors, outTensors);
  const result = {};
  for (const name of Object.keys(outputs)) result[name] = new Float32Array(await context.readTensor(outTensors[name]));
  return result;
}

test('a MobileNet-style classifier matches onnxruntime', async () => {
  const context = await navigator.ml.createContext({ powerPreference: 'default' });
  const weights = mobilenetWeights();
  const graph = await buildMobileNet(context, weights);
  const x = { shape: [1, 3, 16, 16], data: random(11)(768) };
  const expected = oracle('mobilenet', { ...weights, x });
  const got = await run(context, graph, { x }, { probs: [1, 10] });
  assertClose(got.probs, expected.probs, { rtol: 1e-4, atol: 1e-6 }, 'probs');
  // a second image through the same graph and tensors
  const x2 = { shape: [1, 3, 16, 16], data: random(12)(768) };
  const again = await run(context, graph, { x: x2 }, { probs: [1, 10] });
  assertClose(again.probs, oracle('mobilenet', { ...weights, x: x2 }).probs, { rtol: 1e-4, atol: 1e-6 }, 'probs (2nd)');
  context.destroy();
});

test('a transformer block matches onnxruntime', async () => {
  const context = await navigator.ml.createContext();
  const weights = transformerWeights();
  const graph = await buildTransformerBlock(context, weights);
  const x = { shape: [1, SEQ, D], data: random(31)(SEQ * D, -2, 2) };
  const got = await run(context, graph, { x }, { y: [1, SEQ, D] });
  assertClose(got.y, oracle('transformer', { ...weights, x }).y, { rtol: 1e-4, atol: 1e-5 }, 'y');
  context.destroy();
});
