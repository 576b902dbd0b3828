// A pre-norm transformer encoder block written as a browser WebNN sample writes it: layer
// normalization, two-head self-attention (matmul, reshape/transpose into heads, scaled softmax),
// a feed-forward layer with GELU written from erf, 0.5 x (1 + erf(x / sqrt 2)), and residual adds.
// Weights and the input sequence are random numbers from a fixed seed. Prints {"y": [...]}.
// Under Node: node --require <repo>/js/webnn/register.js transformer-block.js

/** Uniform numbers in [lo, hi) from a seed (mulberry32), as float32. */
function seeded(seed) {
  let a = seed >>> 0;
  return (n, lo = -1, hi = 1) => Float32Array.from({ length: n }, () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return lo + (hi - lo) * (((t ^ (t >>> 14)) >>> 0) / 4294967296);
  });
}

const SEQ = 8;
const D = 16;
const HEADS = 2;
const HIDDEN = 32;
const size = (shape) => shape.reduce((a, b) => a * b, 1);

// name: [shape, lo, hi], generated in this order from seed 21
const WEIGHTS = {
  ln1Scale: [[D], 0.8, 1.2], ln1Bias: [[D], -0.1, 0.1],
  wq: [[D, D], -0.3, 0.3], bq: [[D], -0.3, 0.3],
  wk: [[D, D], -0.3, 0.3], bk: [[D], -0.3, 0.3],
  wv: [[D, D], -0.3, 0.3], bv: [[D], -0.3, 0.3],
  wo: [[D, D], -0.3, 0.3], bo: [[D], -0.3, 0.3],
  ln2Scale: [[D], 0.8, 1.2], ln2Bias: [[D], -0.1, 0.1],
  wUp: [[D, HIDDEN], -0.3, 0.3], bUp: [[HIDDEN], -0.3, 0.3],
  wDown: [[HIDDEN, D], -0.3, 0.3], bDown: [[D], -0.3, 0.3],
};

async function main() {
  const context = await navigator.ml.createContext();
  const builder = new MLGraphBuilder(context);
  const random = seeded(21);
  const w = {};
  for (const [name, [shape, lo, hi]] of Object.entries(WEIGHTS)) {
    w[name] = builder.constant({ dataType: 'float32', shape }, random(size(shape), lo, hi));
  }
  const scalar = (v) => builder.constant({ dataType: 'float32', shape: [] }, new Float32Array([v]));
  const layerNorm = (v, scale, bias) => builder.layerNormalization(v, { axes: [2], scale, bias, epsilon: 1e-5 });
  const linear = (v, weight, bias) => builder.add(builder.matmul(v, weight), bias);
  const dh = D / HEADS;
  // [1, SEQ, D] -> [1, HEADS, SEQ, dh]
  const splitHeads = (v) => builder.transpose(builder.reshape(v, [1, SEQ, HEADS, dh]), { permutation: [0, 2, 1, 3] });

  const x = builder.input('x', { dataType: 'float32', shape: [1, SEQ, D] });
  const h = layerNorm(x, w.ln1Scale, w.ln1Bias);
  const q = splitHeads(linear(h, w.wq, w.bq));
  const k = splitHeads(linear(h, w.wk, w.bk));
  const v = splitHeads(linear(h, w.wv, w.bv));
  const scores = builder.mul(builder.matmul(q, builder.transpose(k, { permutation: [0, 1, 3, 2] })), scalar(1 / Math.sqrt(dh)));
  const attention = builder.matmul(builder.softmax(scores, 3), v);
  const merged = builder.reshape(builder.transpose(attention, { permutation: [0, 2, 1, 3] }), [1, SEQ, D]);
  const y1 = builder.add(x, linear(merged, w.wo, w.bo));

  const u = linear(layerNorm(y1, w.ln2Scale, w.ln2Bias), w.wUp, w.bUp);
  const gelu = builder.mul(builder.mul(u, scalar(0.5)),
    builder.add(scalar(1), builder.erf(builder.div(u, scalar(Math.SQRT2)))));
  const y = builder.add(y1, linear(gelu, w.wDown, w.bDown));
  const graph = await builder.build({ y });

  const xTensor = await context.createTensor({ dataType: 'float32', shape: [1, SEQ, D], writable: true });
  const yTensor = await context.createTensor({ dataType: 'float32', shape: [1, SEQ, D], readable: true });
  context.writeTensor(xTensor, seeded(31)(SEQ * D, -2, 2));
  context.dispatch(graph, { x: xTensor }, { y: yTensor });
  console.log(JSON.stringify({ y: Array.from(new Float32Array(await context.readTensor(yTensor))) }));
}

main().catch((e) => { console.error(`${e.name}: ${e.message}`); process.exitCode = 1; });
