'use strict';
// Random calls of every MLGraphBuilder operation, valid and invalid, as WebNN JSON fragments:
// {inputs: {name: descriptor}, args: [[param, value]], op}. Operand arguments are input names.
// Used to hold the JS builder's validation and output shapes against Estuary's importer.

function generator(seed) {
  let a = seed >>> 0;
  const r = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(r() * (hi - lo + 1));
  const pick = (xs) => xs[Math.floor(r() * xs.length)];
  const maybe = (p = 0.5) => r() < p;
  const shape = (rank, max = 4) => Array.from({ length: rank }, () => int(1, max));
  return { r, int, pick, maybe, shape };
}

const FLOAT = ['float32', 'float16'];
const TYPES = ['float32', 'float16', 'int32', 'uint32', 'int64', 'int8', 'uint8'];

/** A shape that broadcasts with `s` (usually): some dimensions set to 1, some leading ones dropped. */
function broadcastable(g, s) {
  if (g.maybe(0.1)) return g.shape(g.int(0, 4));
  const drop = g.int(0, s.length);
  return s.slice(drop).map((d) => (g.maybe(0.3) ? 1 : d));
}

function axesOf(g, rank) {
  const axes = [...Array(rank).keys()].filter(() => g.maybe());
  if (g.maybe(0.1)) axes.push(g.int(0, rank + 1)); // sometimes repeated or out of range
  return axes;
}

function filterLayoutShape(layout, o, i, h, w) {
  const dims = { o, i, h, w };
  return [...layout].map((c) => dims[c]);
}

/** One random case for `op`. */
function makeCase(op, g) {
  const inputs = {};
  let n = 0;
  const operand = (dataType, shape) => {
    const name = `in${n++}`;
    inputs[name] = { dataType, shape };
    return name;
  };
  const t = g.maybe(0.85) ? 'float32' : g.pick(TYPES);
  const options = {};
  const args = [];
  const withOptions = () => { if (Object.keys(options).length || g.maybe(0.2)) args.push(['options', options]); };
  const rank = g.int(0, 4);
  const s = g.shape(rank);
  const binary = ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow', 'equal', 'notEqual', 'greater', 'greaterOrEqual',
    'lesser', 'lesserOrEqual', 'logicalAnd', 'logicalOr', 'logicalXor'];
  if (binary.includes(op)) {
    const ta = op.startsWith('logical') && g.maybe(0.8) ? 'uint8' : t;
    args.push(['a', operand(ta, s)], ['b', operand(g.maybe(0.9) ? ta : g.pick(TYPES), broadcastable(g, s))]);
  } else if (['leakyRelu', 'elu'].includes(op)) {
    args.push(['input', operand(t, s)]);
    if (g.maybe()) options.alpha = g.pick([0.1, 1, 2.5]);
  } else if (['hardSigmoid', 'linear'].includes(op)) {
    args.push(['input', operand(t, s)]);
    if (g.maybe()) options.alpha = g.pick([0.2, -1]);
    if (g.maybe()) options.beta = g.pick([0.5, 3]);
  } else if (op === 'prelu') {
    args.push(['input', operand(t, s)], ['slope', operand(g.maybe(0.9) ? t : 'int32', broadcastable(g, s))]);
  } else if (op === 'softmax') {
    args.push(['input', operand(t, s)], ['axis', g.int(0, rank)]);
  } else if (op === 'cast') {
    args.push(['input', operand(g.pick(TYPES), s)], ['type', g.pick(TYPES)]);
  } else if (op === 'clamp') {
    args.push(['input', operand(t, s)]);
    if (g.maybe()) options.minValue = g.pick([-1, 0, 2]);
    if (g.maybe()) options.maxValue = g.pick([1, 6, -3]);
  } else if (op === 'where') {
    args.push(['condition', operand(g.maybe(0.9) ? 'uint8' : 'float32', broadcastable(g, s))],
      ['trueValue', operand(t, s)], ['falseValue', operand(g.maybe(0.9) ? t : 'int32', broadcastable(g, s))]);
  } else if (['argMin', 'argMax'].includes(op)) {
    args.push(['input', operand(t, s)], ['axis', g.int(0, rank)]);
    if (g.maybe()) options.keepDimensions = g.maybe();
    if (g.maybe()) options.outputDataType = g.pick(['int32', 'int64', 'float32']);
  } else if (op.startsWith('reduce')) {
    args.push(['input', operand(t, s)]);
    if (g.maybe(0.7)) options.axes = axesOf(g, rank);
    if (g.maybe()) options.keepDimensions = g.maybe();
  } else if (op === 'cumulativeSum') {
    args.push(['input', operand(t, s)], ['axis', g.int(0, rank)]);
    if (g.maybe()) options.exclusive = g.maybe();
    if (g.maybe()) options.reversed = g.maybe();
  } else if (op === 'batchNormalization') {
    const x = g.shape(g.int(1, 4));
    const axis = g.maybe(0.8) ? Math.min(1, x.length - 1) : g.int(0, x.length);
    const c = [x[axis] ?? 2];
    const wrong = () => (g.maybe(0.9) ? c : [c[0] + 1]);
    args.push(['input', operand(t, x)], ['mean', operand(t, wrong())], ['variance', operand(t, wrong())]);
    if (axis !== 1 || g.maybe(0.2)) options.axis = axis;
    if (g.maybe()) options.scale = operand(t, wrong());
    if (g.maybe()) options.bias = operand(t, wrong());
    if (g.maybe()) options.epsilon = 1e-3;
  } else if (op === 'instanceNormalization') {
    const x = g.shape(g.maybe(0.9) ? 4 : 3);
    const layout = g.pick(['nchw', 'nhwc', undefined]);
    const c = [x[layout === 'nhwc' ? 3 : 1] ?? 1];
    args.push(['input', operand(t, x)]);
    if (layout) options.layout = layout;
    if (g.maybe()) options.scale = operand(t, g.maybe(0.9) ? c : [c[0] + 1]);
    if (g.maybe()) options.bias = operand(t, c);
  } else if (op === 'layerNormalization') {
    args.push(['input', operand(t, s)]);
    let axes = [...Array(rank).keys()].slice(1);
    if (g.maybe()) { axes = axesOf(g, rank); options.axes = axes; }
    const shp = axes.map((x) => s[x] ?? 1);
    if (g.maybe()) options.scale = operand(t, g.maybe(0.9) ? shp : [...shp, 2]);
    if (g.maybe()) options.bias = operand(t, shp);
  } else if (op === 'conv2d' || op === 'convTranspose2d') {
    const transpose = op === 'convTranspose2d';
    const groups = g.pick([1, 1, 2]);
    const cin = groups * g.int(1, 2);
    const cout = groups * g.int(1, 2);
    const [h, w] = [g.int(2, 6), g.int(2, 6)];
    const [kh, kw] = [g.int(1, 3), g.int(1, 3)];
    const nhwc = g.maybe(0.3);
    args.push(['input', operand(t, nhwc ? [1, h, w, cin] : [1, cin, h, w])]);
    const layouts = transpose ? ['iohw', 'hwoi', 'ohwi'] : ['oihw', 'hwio', 'ohwi', 'ihwo'];
    const layout = g.maybe(0.6) ? layouts[0] : g.pick(layouts);
    // conv2d filter: o = cout, i = cin / groups; convTranspose2d: i = cin, o = cout / groups
    const [fo, fi] = transpose ? [cout / groups, cin] : [cout, cin / groups];
    args.push(['filter', operand(t, filterLayoutShape(layout, g.maybe(0.9) ? fo : fo + 1, fi, kh, kw))]);
    if (nhwc) options.inputLayout = 'nhwc';
    if (layout !== layouts[0] || g.maybe(0.2)) options.filterLayout = layout;
    if (groups > 1) options.groups = groups;
    if (g.maybe()) options.padding = [g.int(0, 1), g.int(0, 1), g.int(0, 1), g.int(0, 1)];
    if (g.maybe()) options.strides = [g.int(1, 2), g.int(1, 2)];
    if (g.maybe(0.3)) options.dilations = [g.int(1, 2), g.int(1, 2)];
    if (transpose && g.maybe(0.3)) options.outputPadding = [g.int(0, 1), g.int(0, 1)];
    if (g.maybe(0.4)) options.bias = operand(t, [g.maybe(0.9) ? cout : cout + 1]);
  } else if (['averagePool2d', 'l2Pool2d', 'maxPool2d'].includes(op)) {
    const nhwc = g.maybe(0.3);
    const [c, h, w] = [g.int(1, 3), g.int(2, 7), g.int(2, 7)];
    args.push(['input', operand(t, nhwc ? [1, h, w, c] : [1, c, h, w])]);
    if (nhwc) options.layout = 'nhwc';
    if (g.maybe(0.7)) options.windowDimensions = [g.int(1, 3), g.int(1, 3)];
    if (g.maybe()) options.padding = [g.int(0, 1), g.int(0, 1), g.int(0, 1), g.int(0, 1)];
    if (g.maybe()) options.strides = [g.int(1, 2), g.int(1, 2)];
    if (g.maybe(0.2)) options.dilations = [g.int(1, 2), g.int(1, 2)];
    if (g.maybe(0.3)) options.outputShapeRounding = g.pick(['floor', 'ceil']);
  } else if (op === 'resample2d') {
    args.push(['input', operand(t, g.shape(4))]);
    if (g.maybe()) options.mode = g.pick(['nearest-neighbor', 'linear']);
    if (g.maybe()) options.scales = [g.pick([0.5, 1, 2, 1.5]), g.pick([1, 2, 3])];
    else if (g.maybe()) options.sizes = [g.int(1, 6), g.int(1, 6)];
    if (g.maybe(0.3)) options.axes = g.pick([[2, 3], [1, 2], [0, 1], [1, 3]]);
  } else if (op === 'gemm') {
    const [m, k, nn] = [g.int(1, 4), g.int(1, 4), g.int(1, 4)];
    const at = g.maybe(0.3);
    const bt = g.maybe(0.3);
    args.push(['a', operand(t, at ? [k, m] : [m, k])], ['b', operand(t, bt ? [nn, g.maybe(0.9) ? k : k + 1] : [k, nn])]);
    if (at) options.aTranspose = true;
    if (bt) options.bTranspose = true;
    if (g.maybe()) options.c = operand(t, broadcastable(g, [m, nn]));
    if (g.maybe(0.3)) options.alpha = 2;
    if (g.maybe(0.3)) options.beta = 0.5;
  } else if (op === 'matmul') {
    const batch = g.shape(g.int(0, 2));
    const [m, k, nn] = [g.int(1, 4), g.int(1, 4), g.int(1, 4)];
    args.push(['a', operand(t, [...batch, m, k])], ['b', operand(t, [...broadcastable(g, batch), g.maybe(0.9) ? k : k + 1, nn])]);
  } else if (op === 'reshape') {
    const size = s.reduce((x, y) => x * y, 1);
    const target = g.maybe(0.8) ? [size] : g.shape(g.int(0, 3));
    if (g.maybe() && size % 2 === 0) target.splice(0, 1, 2, size / 2);
    args.push(['input', operand(t, s)], ['newShape', target]);
  } else if (op === 'expand') {
    const target = [...g.shape(g.int(0, 2)), ...s.map((d) => (d === 1 ? g.int(1, 3) : d))];
    args.push(['input', operand(t, s)], ['newShape', g.maybe(0.9) ? target : g.shape(rank)]);
  } else if (op === 'transpose') {
    args.push(['input', operand(t, s)]);
    if (g.maybe(0.7)) {
      const perm = [...Array(rank).keys()].sort(() => g.r() - 0.5);
      if (g.maybe(0.1)) perm.push(0);
      options.permutation = perm;
    }
  } else if (op === 'concat') {
    const r1 = Math.max(rank, 1);
    const base = g.shape(r1);
    const axis = g.int(0, r1);
    const list = Array.from({ length: g.int(1, 3) }, () => operand(t, base.map((d, i) => (i === axis ? g.int(1, 3) : d))));
    args.push(['inputs', list], ['axis', axis]);
  } else if (op === 'slice') {
    args.push(['input', operand(t, s)]);
    const starts = s.map((d) => g.int(0, d - 1));
    const sizes = s.map((d, i) => g.int(1, d - starts[i] + (g.maybe(0.1) ? 1 : 0)));
    args.push(['starts', starts], ['sizes', sizes]);
    if (g.maybe(0.4)) options.strides = s.map(() => g.int(1, 2));
  } else if (op === 'split') {
    const r1 = Math.max(rank, 1);
    const x = g.shape(r1);
    const axis = g.int(0, r1 - 1);
    args.push(['input', operand(t, x)]);
    if (g.maybe()) {
      args.push(['splits', g.pick([1, 2, x[axis]])]);
    } else {
      const first = g.int(1, x[axis]);
      args.push(['splits', first < x[axis] ? [first, x[axis] - first] : [first]]);
    }
    if (axis || g.maybe(0.2)) options.axis = axis;
  } else if (op === 'pad') {
    args.push(['input', operand(t, s)], ['beginningPadding', s.map(() => g.int(0, 2))], ['endingPadding', s.map(() => g.int(0, 2))]);
    if (g.maybe()) options.mode = g.pick(['constant', 'edge', 'reflection']);
    if (g.maybe(0.3)) options.value = 1.5;
  } else if (['gather', 'gatherElements', 'scatterElements'].includes(op)) {
    const r1 = Math.max(rank, 1);
    const x = g.shape(r1);
    const axis = g.int(0, r1 - 1);
    const it = g.pick(['int32', 'int32', 'int64', 'uint32', 'float32']);
    const ishape = op === 'gather' ? g.shape(g.int(0, 2)) : x.map((d, i) => (i === axis ? g.int(1, 3) : d));
    args.push(['input', operand(t, x)], ['indices', operand(it, ishape)]);
    if (op === 'scatterElements') args.push(['updates', operand(t, g.maybe(0.9) ? ishape : [...ishape, 1])]);
    if (axis || g.maybe(0.2)) options.axis = axis;
  } else if (['gatherND', 'scatterND'].includes(op)) {
    const x = g.shape(g.int(1, 3));
    const k = g.int(1, x.length);
    const batch = g.shape(g.int(0, 2));
    const it = g.pick(['int32', 'int64', 'uint32']);
    args.push(['input', operand(t, x)], ['indices', operand(it, [...batch, k])]);
    if (op === 'scatterND') args.push(['updates', operand(t, [...batch, ...x.slice(k)])]);
  } else if (op === 'tile') {
    args.push(['input', operand(t, s)], ['repetitions', s.map(() => g.int(1, 3))]);
  } else if (op === 'reverse') {
    args.push(['input', operand(t, s)]);
    if (g.maybe(0.7)) options.axes = axesOf(g, rank);
  } else if (op === 'triangular') {
    args.push(['input', operand(t, g.shape(g.int(1, 4)))]);
    if (g.maybe()) options.upper = g.maybe();
    if (g.maybe()) options.diagonal = g.int(-2, 2);
  } else if (op === 'quantizeLinear' || op === 'dequantizeLinear') {
    const x = g.shape(g.int(1, 3));
    let qs = x.map((d) => (g.maybe() ? 1 : d % 2 === 0 && g.maybe() ? d / 2 : d)); // block-wise too
    if (g.maybe(0.1)) qs = qs.slice(1);
    const q = g.pick(['int8', 'uint8', 'int32']);
    args.push(['input', operand(op === 'quantizeLinear' ? t : q, x)], ['scale', operand(t, qs)], ['zeroPoint', operand(q, qs)]);
  } else if (['gru', 'lstm', 'gruCell', 'lstmCell'].includes(op)) {
    const gates = op.startsWith('gru') ? 3 : 4;
    const [steps, batch, size, hidden] = [g.int(1, 3), g.int(1, 2), g.int(1, 3), g.int(1, 3)];
    const bad = () => (g.maybe(0.95) ? 0 : 1);
    if (op.endsWith('Cell')) {
      args.push(['input', operand(t, [batch, size])], ['weight', operand(t, [gates * hidden, size + bad()])],
        ['recurrentWeight', operand(t, [gates * hidden, hidden])], ['hiddenState', operand(t, [batch, hidden])]);
      if (op === 'lstmCell') args.push(['cellState', operand(t, [batch, hidden])]);
      args.push(['hiddenSize', hidden]);
      if (g.maybe()) options.bias = operand(t, [gates * hidden]);
      if (g.maybe()) options.recurrentBias = operand(t, [gates * hidden]);
    } else {
      const dirs = g.maybe(0.3) ? 2 : 1;
      args.push(['input', operand(t, [steps, batch, size])], ['weight', operand(t, [dirs, gates * hidden, size + bad()])],
        ['recurrentWeight', operand(t, [dirs, gates * hidden, hidden])], ['steps', steps], ['hiddenSize', hidden]);
      if (dirs === 2 || g.maybe(0.2)) options.direction = dirs === 2 ? 'both' : g.pick(['forward', 'backward']);
      if (g.maybe()) options.returnSequence = g.maybe();
      if (g.maybe()) options.bias = operand(t, [dirs, gates * hidden]);
      if (g.maybe()) options.initialHiddenState = operand(t, [dirs, batch, hidden]);
      if (op === 'lstm' && g.maybe()) options.initialCellState = operand(t, [dirs, batch, hidden]);
    }
  } else {
    // unary operations: abs, ceil, cos, erf, exp, floor, identity, log, neg, reciprocal, sin, sqrt,
    // tan, sign, roundEven, isNaN, isInfinite, relu, sigmoid, tanh, gelu, hardSwish, softplus,
    // softsign, logicalNot
    args.push([op === 'logicalNot' ? 'a' : 'input', operand(op === 'logicalNot' && g.maybe(0.8) ? 'uint8' : t, s)]);
  }
  withOptions();
  return { op, inputs, args };
}

module.exports = { generator, makeCase };
