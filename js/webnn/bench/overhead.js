'use strict';
// Per-call cost of the JS bridge: a one-op graph (relu on 1x1000 float32) and the MobileNet-style
// classifier of the tests, each as write + dispatch + read per call; also queued dispatches with
// one read at the end, and build() (compile) times. Prints JSON; overhead.py measures the same
// graphs through the Python API.  Usage: node js/webnn/bench/overhead.js [iterations]
require('../register');
const { mobilenetWeights, buildMobileNet } = require('../test-support/models');

const N = Number(process.argv[2] || 1000);
const f32 = (shape) => ({ dataType: 'float32', shape });
const now = () => Number(process.hrtime.bigint()) / 1e6;

async function perCall(context, graph, inShape, [outName, outShape], n) {
  const x = await context.createTensor({ ...f32(inShape), writable: true });
  const y = await context.createTensor({ ...f32(outShape), readable: true });
  const data = new Float32Array(inShape.reduce((a, b) => a * b, 1)).map((_, i) => Math.sin(i));
  const out = new Float32Array(outShape.reduce((a, b) => a * b, 1));
  const once = async () => {
    context.writeTensor(x, data);
    context.dispatch(graph, { x }, { [outName]: y });
    await context.readTensor(y, out);
  };
  for (let i = 0; i < Math.min(50, n); i++) await once();
  const times = [];
  for (let i = 0; i < n; i++) {
    const t = now();
    await once();
    times.push(now() - t);
  }
  times.sort((a, b) => a - b);
  const t0 = now();
  for (let i = 0; i < n; i++) context.dispatch(graph, { x }, { [outName]: y });
  await context.readTensor(y, out);
  return { median_ms: times[n >> 1], mean_ms: times.reduce((a, b) => a + b, 0) / n, p90_ms: times[Math.floor(n * 0.9)],
    queued_dispatch_ms: (now() - t0) / n };
}

(async () => {
  let t = now();
  const context = await navigator.ml.createContext();
  const startup = now() - t;
  const b = new MLGraphBuilder(context);
  t = now();
  const one = await b.build({ y: b.relu(b.input('x', f32([1, 1000]))) });
  const buildOne = now() - t;
  t = now();
  const mobilenet = await buildMobileNet(context, mobilenetWeights());
  const buildMobile = now() - t;
  const result = {
    context_ms: startup,
    one_op: { build_ms: buildOne, ...(await perCall(context, one, [1, 1000], ['y', [1, 1000]], N)) },
    mobilenet: { build_ms: buildMobile, ...(await perCall(context, mobilenet, [1, 3, 16, 16], ['probs', [1, 10]], Math.max(1, N >> 2))) },
  };
  console.log(JSON.stringify(result, null, 1));
  context.destroy();
})();
