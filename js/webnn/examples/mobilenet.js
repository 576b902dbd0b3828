// A MobileNet-style image classifier written as a browser WebNN sample writes it: NHWC layout,
// a 3x3/2 stem convolution + batch normalization + relu6 (clamp), a depthwise 3x3 convolution
// (groups = channels) with a residual add, a pointwise 1x1 convolution, global average pooling,
// a fully connected layer (matmul + add) and softmax. Weights and the input image are random
// numbers from a fixed seed, so the sample needs no download. Prints {"probs": [...]}.
// Under Node: node --require <repo>/js/webnn/register.js mobilenet.js

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

const size = (shape) => shape.reduce((a, b) => a * b, 1);

// name: [shape, lo, hi], generated in this order from seed 7
const WEIGHTS = {
  stemFilter: [[8, 3, 3, 3], -0.5, 0.5], // ohwi
  stemBias: [[8], -1, 1],
  bnMean: [[8], -0.2, 0.2],
  bnVariance: [[8], 0.5, 1.5],
  bnScale: [[8], 0.5, 1.5],
  bnBias: [[8], -0.2, 0.2],
  dwFilter: [[1, 3, 3, 8], -0.5, 0.5], // ihwo: depthwise
  dwBias: [[8], -0.1, 0.1],
  pwFilter: [[16, 1, 1, 8], -0.5, 0.5], // ohwi
  fcWeight: [[16, 10], -1, 1],
  fcBias: [[10], -0.1, 0.1],
};

async function main() {
  const context = await navigator.ml.createContext({ powerPreference: 'default' });
  const builder = new MLGraphBuilder(context);
  const random = seeded(7);
  const w = {};
  for (const [name, [shape, lo, hi]] of Object.entries(WEIGHTS)) {
    w[name] = builder.constant({ dataType: 'float32', shape }, random(size(shape), lo, hi));
  }
  const nhwc = { inputLayout: 'nhwc' };

  const image = builder.input('image', { dataType: 'float32', shape: [1, 16, 16, 3] });
  let x = builder.conv2d(image, w.stemFilter,
    { ...nhwc, filterLayout: 'ohwi', bias: w.stemBias, padding: [1, 1, 1, 1], strides: [2, 2], label: 'stem' });
  x = builder.batchNormalization(x, w.bnMean, w.bnVariance,
    { axis: 3, scale: w.bnScale, bias: w.bnBias, epsilon: 1e-5 });
  const stem = builder.clamp(x, { minValue: 0, maxValue: 6 }); // relu6
  x = builder.conv2d(stem, w.dwFilter,
    { ...nhwc, filterLayout: 'ihwo', bias: w.dwBias, padding: [1, 1, 1, 1], groups: 8, label: 'depthwise' });
  x = builder.relu(builder.add(x, stem));
  x = builder.relu(builder.conv2d(x, w.pwFilter, { ...nhwc, filterLayout: 'ohwi', label: 'pointwise' }));
  x = builder.averagePool2d(x, { layout: 'nhwc' }); // global: the window is the whole 8x8 map
  x = builder.reshape(x, [1, 16]);
  const logits = builder.add(builder.matmul(x, w.fcWeight), w.fcBias);
  const graph = await builder.build({ probs: builder.softmax(logits, 1) });

  const imageTensor = await context.createTensor({ dataType: 'float32', shape: [1, 16, 16, 3], writable: true });
  const probsTensor = await context.createTensor({ dataType: 'float32', shape: [1, 10], readable: true });
  context.writeTensor(imageTensor, seeded(11)(16 * 16 * 3));
  context.dispatch(graph, { image: imageTensor }, { probs: probsTensor });
  const probs = new Float32Array(await context.readTensor(probsTensor));
  console.log(JSON.stringify({ probs: Array.from(probs) }));
}

main().catch((e) => { console.error(`${e.name}: ${e.message}`); process.exitCode = 1; });
