'use strict';
// MLGraphBuilder's operations: the spec's validation and output-shape steps of each, as rules over
// converted arguments. What each method takes (its parameters and options, their WebIDL types, the
// options' defaults) is not stated here: it comes from Estuary's WebNN registry through
// lib/signatures.json (lib/webidl.js), and OPS joins each signature with its rule. A rule sees the
// operands as {dataType, shape}, the other arguments converted, and `options` with the dictionary
// defaults filled in; every failure throws a TypeError naming the operation (and its label), as the
// spec's algorithms do, before anything is recorded. A dimension is a number or, for dynamic shapes,
// a Dim (lib/dims.js): the rules of the operations that take dynamic dimensions use its arithmetic
// and unification, mirroring Estuary's nn type rules. test/signatures.test.js holds the rules to
// the registry: each signature has a rule and each rule a signature, and a corpus of calls derived
// from the signatures is replayed through both (test-support/corpus.js).
const D = require('./dims');
const { SIGNATURES, fail } = require('./webidl');

const FLOATS = ['float32', 'float16'];

// ------------------------------------------------------------------ shape helpers

const size = (shape) => shape.reduce((a, b) => D.mul(a, b), 1);
const same = (a, b) => a.length === b.length && a.every((x, i) => D.equal(x, b[i]));
// two dimensions that must be equal: equal ones, or dynamic ones the graph's Unifier makes equal
const unified = (x, y) => (D.isDim(x) || D.isDim(y) ? D.same(x, y) : null);

function broadcast(w, a, b) {
  const rank = Math.max(a.length, b.length);
  const out = [];
  for (let i = 0; i < rank; i++) {
    const x = a[a.length - rank + i] ?? 1;
    const y = b[b.length - rank + i] ?? 1;
    if (D.equal(x, y) || y === 1) {
      out.push(x);
    } else if (x === 1) {
      out.push(y);
    } else {
      const common = unified(x, y);
      if (common === null) fail(w, `shapes [${a}] and [${b}] cannot be broadcast`);
      out.push(common);
    }
  }
  return out;
}

function unidirectional(w, from, to, what) {
  if (from.length > to.length) fail(w, `${what} of shape [${from}] cannot be broadcast to [${to}]`);
  from.forEach((d, i) => {
    const t = to[to.length - from.length + i];
    if (!D.equal(d, t) && d !== 1 && unified(d, t) === null) fail(w, `${what} of shape [${from}] cannot be broadcast to [${to}]`);
  });
}

/** A dynamic dimension where the operation needs a fixed one: a TypeError naming it. */
function fixed(w, what, d, reason) {
  if (D.isDim(d)) fail(w, `${what} (${d}) must be fixed; ${reason}`);
}

function checkAxes(w, axes, rank, what = 'axes') {
  const seen = new Set();
  for (const a of axes) {
    if (a >= rank) fail(w, `${what} ${a} is out of range for rank ${rank}`);
    if (seen.has(a)) fail(w, `${what} has ${a} twice`);
    seen.add(a);
  }
}

function sameType(w, operands) {
  const [first, ...rest] = operands;
  for (const [name, o] of rest) {
    if (o.dataType !== first[1].dataType) fail(w, `${name} is ${o.dataType} but ${first[0]} is ${first[1].dataType}`);
  }
}

function oneOf(w, what, dataType, types) {
  if (!types.includes(dataType)) fail(w, `${what} must be of type ${types.join(' or ')}, got ${dataType}`);
}

function rankIs(w, what, o, rank) {
  if (o.shape.length !== rank) fail(w, `${what} must have rank ${rank}, got shape [${o.shape}]`);
}

function shapeIs(w, what, o, shape) {
  if (!same(o.shape, shape)) fail(w, `${what} must have shape [${shape}], got [${o.shape}]`);
}

const desc = (dataType, shape) => ({ dataType, shape });

// ------------------------------------------------------------------ operations

const RULES = {};

/** The rule of operation `name`: infer(where, args) -> descriptor(s), or a TypeError. */
function rule(name, infer) {
  if (RULES[name]) throw new Error(`two rules for ${name}`);
  RULES[name] = infer;
}

const elementwiseBinary = (out) => (w, { a, b }) => {
  sameType(w, [['a', a], ['b', b]]);
  return desc(out ?? a.dataType, broadcast(w, a.shape, b.shape));
};
for (const n of ['add', 'sub', 'mul', 'div', 'max', 'min', 'pow']) {
  rule(n, elementwiseBinary());
}
for (const n of ['equal', 'notEqual', 'greater', 'greaterOrEqual', 'lesser', 'lesserOrEqual']) {
  rule(n, elementwiseBinary('uint8'));
}
for (const n of ['logicalAnd', 'logicalOr', 'logicalXor']) {
  rule(n, (w, args) => {
    oneOf(w, 'a', args.a.dataType, ['uint8']);
    return elementwiseBinary('uint8')(w, args);
  });
}
rule('logicalNot', (w, { a }) => {
  oneOf(w, 'a', a.dataType, ['uint8']);
  return desc('uint8', a.shape);
});

const FLOAT_UNARY = ['cos', 'erf', 'exp', 'log', 'reciprocal', 'sin', 'sqrt', 'tan', 'ceil', 'floor', 'roundEven',
  'sigmoid', 'tanh', 'gelu', 'hardSwish', 'softplus', 'softsign'];
for (const n of [...FLOAT_UNARY, 'abs', 'neg', 'identity', 'sign', 'relu']) {
  rule(n, (w, { input }) => {
    if (FLOAT_UNARY.includes(n)) oneOf(w, 'input', input.dataType, FLOATS);
    return desc(input.dataType, input.shape);
  });
}
for (const n of ['isNaN', 'isInfinite']) {
  rule(n, (w, { input }) => {
    oneOf(w, 'input', input.dataType, FLOATS);
    return desc('uint8', input.shape);
  });
}
const floatActivation = (w, { input }) => {
  oneOf(w, 'input', input.dataType, FLOATS);
  return desc(input.dataType, input.shape);
};
rule('leakyRelu', floatActivation);
rule('elu', floatActivation);
rule('hardSigmoid', floatActivation);
rule('linear', floatActivation);
rule('prelu', (w, { input, slope }) => {
  sameType(w, [['input', input], ['slope', slope]]);
  return desc(input.dataType, broadcast(w, input.shape, slope.shape)); // bidirectional, as the spec says
});
rule('softmax', (w, { input, axis }) => {
  oneOf(w, 'input', input.dataType, FLOATS);
  if (axis >= input.shape.length) fail(w, `axis ${axis} is out of range for rank ${input.shape.length}`);
  return desc(input.dataType, input.shape);
});
rule('cast', (w, { input, type }) => desc(type, input.shape));
rule('clamp', (w, { input, options }) => {
  const lo = Number(options.minValue ?? -Infinity);
  const hi = Number(options.maxValue ?? Infinity);
  if (Number.isNaN(lo) || Number.isNaN(hi) || lo > hi) fail(w, `minValue ${lo} must not exceed maxValue ${hi}`);
  return desc(input.dataType, input.shape);
});
rule('where', (w, { condition, trueValue, falseValue }) => {
  oneOf(w, 'condition', condition.dataType, ['uint8']);
  sameType(w, [['trueValue', trueValue], ['falseValue', falseValue]]);
  const shape = broadcast(w, broadcast(w, condition.shape, trueValue.shape), falseValue.shape);
  return desc(trueValue.dataType, shape);
});

for (const n of ['argMin', 'argMax']) {
  rule(n, (w, { input, axis, options }) => {
    if (axis >= input.shape.length) fail(w, `axis ${axis} is out of range for rank ${input.shape.length}`);
    oneOf(w, 'outputDataType', options.outputDataType, ['int32', 'int64']);
    const shape = options.keepDimensions ? input.shape.map((d, i) => (i === axis ? 1 : d))
      : input.shape.filter((_, i) => i !== axis);
    return desc(options.outputDataType, shape);
  });
}
for (const n of ['reduceL1', 'reduceL2', 'reduceLogSum', 'reduceLogSumExp', 'reduceMax', 'reduceMean', 'reduceMin',
  'reduceProduct', 'reduceSum', 'reduceSumSquare']) {
  rule(n, (w, { input, options }) => {
    const rank = input.shape.length;
    const axes = options.axes ?? [...Array(rank).keys()];
    checkAxes(w, axes, rank);
    const shape = options.keepDimensions ? input.shape.map((d, i) => (axes.includes(i) ? 1 : d))
      : input.shape.filter((_, i) => !axes.includes(i));
    return desc(input.dataType, shape);
  });
}
rule('cumulativeSum', (w, { input, axis }) => {
  if (axis >= input.shape.length) fail(w, `axis ${axis} is out of range for rank ${input.shape.length}`);
  return desc(input.dataType, input.shape);
});

// normalization
function normScaleBias(w, input, options, shape) {
  for (const k of ['scale', 'bias']) {
    if (options[k]) {
      sameType(w, [['input', input], [k, options[k]]]);
      shapeIs(w, k, options[k], shape);
    }
  }
}
rule('batchNormalization', (w, { input, mean, variance, options }) => {
  oneOf(w, 'input', input.dataType, FLOATS);
  const { axis } = options;
  if (axis >= input.shape.length) fail(w, `axis ${axis} is out of range for rank ${input.shape.length}`);
  const c = [input.shape[axis]];
  sameType(w, [['input', input], ['mean', mean], ['variance', variance]]);
  shapeIs(w, 'mean', mean, c);
  shapeIs(w, 'variance', variance, c);
  normScaleBias(w, input, options, c);
  return desc(input.dataType, input.shape);
});
rule('instanceNormalization', (w, { input, options }) => {
  oneOf(w, 'input', input.dataType, FLOATS);
  rankIs(w, 'input', input, 4);
  normScaleBias(w, input, options, [input.shape[options.layout === 'nhwc' ? 3 : 1]]);
  return desc(input.dataType, input.shape);
});
rule('layerNormalization', (w, { input, options }) => {
  oneOf(w, 'input', input.dataType, FLOATS);
  const rank = input.shape.length;
  const axes = options.axes ?? [...Array(rank).keys()].slice(1); // the spec's default: all but the first
  checkAxes(w, axes, rank);
  normScaleBias(w, input, options, axes.map((a) => input.shape[a]));
  return desc(input.dataType, input.shape);
});

// convolution and pooling
function pairOption(w, options, name, dflt, length = 2) {
  const v = options[name] ?? dflt;
  if (v.length !== length) fail(w, `${name} must have ${length} values, got [${v}]`);
  return v;
}

/** The spec's output size, [floor, ceil]: 1 + (padded input - dilated window) / stride (for a
 * dynamic input size, the expressions Estuary's rules build). */
function convOutput(w, inSize, window, pad0, pad1, stride, dilation) {
  if (stride === 0) fail(w, 'strides must be positive');
  if (dilation === 0) fail(w, 'dilations must be positive');
  const span = D.sub(D.add(inSize, pad0 + pad1), D.add(D.mul(D.sub(window, 1), dilation), 1));
  if (!D.isDim(span)) return [Math.floor(span / stride) + 1, Math.ceil(span / stride) + 1];
  return [D.add(D.div(span, stride), 1), D.add(D.sub(0, D.div(D.sub(0, span), stride)), 1)];
}

/** A rounded output size, which must be a valid dimension (a dynamic one: for some input size;
 * the builder records when it must be checked at dispatch). */
function validSize(w, size, what) {
  if (!(D.isDim(size) ? D.upper(size) >= 1 : size >= 1)) {
    fail(w, `the ${what} of the output would be ${size}: the window is larger than the padded input`);
  }
  return size;
}

const FILTER_AXES = { // layout -> [output channels, input channels / groups, height, width] positions
  oihw: [0, 1, 2, 3], hwio: [3, 2, 0, 1], ohwi: [0, 3, 1, 2], ihwo: [3, 0, 1, 2], hwoi: [2, 3, 0, 1],
};
function convCommon(w, input, filter, options) {
  oneOf(w, 'input', input.dataType, FLOATS);
  sameType(w, [['input', input], ['filter', filter]]);
  rankIs(w, 'input', input, 4);
  rankIs(w, 'filter', filter, 4);
  const nhwc = options.inputLayout === 'nhwc';
  const [n, c, h, wd] = nhwc ? [0, 3, 1, 2].map((i) => input.shape[i]) : input.shape;
  const [fo, fi, fh, fw] = FILTER_AXES[options.filterLayout].map((i) => filter.shape[i]);
  const padding = pairOption(w, options, 'padding', [0, 0, 0, 0], 4);
  const strides = pairOption(w, options, 'strides', [1, 1]);
  const dilations = pairOption(w, options, 'dilations', [1, 1]);
  const { groups } = options;
  if (groups === 0) fail(w, 'groups must be positive');
  return { nhwc, n, c, h, wd, fo, fi, fh, fw, padding, strides, dilations, groups };
}

function convBias(w, input, options, channels) {
  if (options.bias) {
    sameType(w, [['input', input], ['bias', options.bias]]);
    shapeIs(w, 'bias', options.bias, [channels]);
  }
}

rule('conv2d', (w, { input, filter, options }) => {
  const k = convCommon(w, input, filter, options);
  filter.shape.forEach((d, i) => fixed(w, `filter dimension ${i}`, d, 'the filter has a fixed shape'));
  fixed(w, 'the input channels', k.c, 'only the batch and spatial dimensions may be dynamic');
  if (k.c % k.groups !== 0 || k.c / k.groups !== k.fi) {
    fail(w, `input channels ${k.c} / groups ${k.groups} must equal the filter's input channels ${k.fi}`);
  }
  if (k.fo % k.groups !== 0) fail(w, `filter output channels ${k.fo} must be divisible by groups ${k.groups}`);
  convBias(w, input, options, k.fo);
  const oh = validSize(w, convOutput(w, k.h, k.fh, k.padding[0], k.padding[1], k.strides[0], k.dilations[0])[0], 'height');
  const ow = validSize(w, convOutput(w, k.wd, k.fw, k.padding[2], k.padding[3], k.strides[1], k.dilations[1])[0], 'width');
  return desc(input.dataType, k.nhwc ? [k.n, oh, ow, k.fo] : [k.n, k.fo, oh, ow]);
});
rule('convTranspose2d', (w, { input, filter, options }) => {
  // filter layouts of convTranspose2d name the input channels first: iohw = [in, out/groups, h, w]
  const axes = { iohw: [1, 0, 2, 3], hwoi: [2, 3, 0, 1], ohwi: [0, 3, 1, 2] };
  oneOf(w, 'input', input.dataType, FLOATS);
  sameType(w, [['input', input], ['filter', filter]]);
  rankIs(w, 'input', input, 4);
  rankIs(w, 'filter', filter, 4);
  const nhwc = options.inputLayout === 'nhwc';
  const [n, c, h, wd] = nhwc ? [0, 3, 1, 2].map((i) => input.shape[i]) : input.shape;
  const [fo, fi, fh, fw] = axes[options.filterLayout].map((i) => filter.shape[i]);
  const { groups } = options;
  if (groups === 0) fail(w, 'groups must be positive');
  if (c !== fi) fail(w, `input channels ${c} must equal the filter's input channels ${fi}`);
  const padding = pairOption(w, options, 'padding', [0, 0, 0, 0], 4);
  const strides = pairOption(w, options, 'strides', [1, 1]);
  const dilations = pairOption(w, options, 'dilations', [1, 1]);
  const outputPadding = pairOption(w, options, 'outputPadding', [0, 0]);
  if (strides.includes(0) || dilations.includes(0)) fail(w, 'strides and dilations must be positive');
  outputPadding.forEach((p, i) => {
    if (p >= strides[i]) fail(w, `outputPadding [${outputPadding}] must be smaller than strides [${strides}]`);
  });
  const channels = fo * groups;
  convBias(w, input, options, channels);
  const full = [h, wd].map((s, i) => strides[i] * (s - 1) + ([fh, fw][i] - 1) * dilations[i] + 1
    - padding[2 * i] - padding[2 * i + 1]);
  let out;
  if (options.outputSizes) {
    out = pairOption(w, options, 'outputSizes', null);
    out.forEach((s, i) => {
      if (s < full[i] || s >= full[i] + strides[i]) fail(w, `outputSizes [${out}] do not fit the input and strides`);
    });
  } else {
    out = full.map((s, i) => s + outputPadding[i]);
  }
  if (out.some((s) => s <= 0)) fail(w, `the output size [${out}] is not positive`);
  return desc(input.dataType, nhwc ? [n, out[0], out[1], channels] : [n, channels, out[0], out[1]]);
});

for (const n of ['averagePool2d', 'l2Pool2d', 'maxPool2d']) {
  rule(n, (w, { input, options }) => {
    if (n !== 'maxPool2d') oneOf(w, 'input', input.dataType, FLOATS);
    rankIs(w, 'input', input, 4);
    const nhwc = options.layout === 'nhwc';
    const [b, c, h, wd] = nhwc ? [0, 3, 1, 2].map((i) => input.shape[i]) : input.shape;
    const window = pairOption(w, options, 'windowDimensions', [h, wd]);
    if (window.includes(0)) fail(w, 'windowDimensions must be positive');
    const padding = pairOption(w, options, 'padding', [0, 0, 0, 0], 4);
    const strides = pairOption(w, options, 'strides', [1, 1]);
    const dilations = pairOption(w, options, 'dilations', [1, 1]);
    const exact = [h, wd].map((s, i) => convOutput(w, s, window[i], padding[2 * i], padding[2 * i + 1], strides[i],
      dilations[i]));
    fixed(w, 'the channels', c, 'only the batch and spatial dimensions may be dynamic');
    let out;
    if (options.outputSizes) {
      out = pairOption(w, options, 'outputSizes', null);
      out.forEach((s, i) => {
        if (!D.equal(s, exact[i][0]) && !D.equal(s, exact[i][1])) fail(w, `outputSizes [${out}] do not match the window`);
      });
    } else {
      const ceil = (options.outputShapeRounding ?? options.roundingType) === 'ceil';
      out = exact.map(([lo, hi]) => (ceil ? hi : lo));
    }
    out.forEach((s, i) => validSize(w, s, i ? 'width' : 'height'));
    return desc(input.dataType, nhwc ? [b, out[0], out[1], c] : [b, c, out[0], out[1]]);
  });
}
rule('resample2d', (w, { input, options }) => {
  oneOf(w, 'input', input.dataType, FLOATS);
  rankIs(w, 'input', input, 4);
  const axes = pairOption(w, options, 'axes', [2, 3]);
  checkAxes(w, axes, 4);
  const shape = [...input.shape];
  const scales = pairOption(w, options, 'scales', [1, 1]); // checked even when sizes decide, as the spec says
  if (!scales.every((s) => s > 0)) fail(w, 'scales must be positive');
  if (options.sizes) {
    const sizes = pairOption(w, options, 'sizes', null);
    if (sizes.includes(0)) fail(w, 'sizes must be positive');
    axes.forEach((a, i) => { shape[a] = sizes[i]; });
  } else {
    axes.forEach((a, i) => {
      shape[a] = Math.floor(input.shape[a] * scales[i]);
      if (shape[a] <= 0) fail(w, `scale ${scales[i]} gives an empty dimension ${a}`);
    });
  }
  return desc(input.dataType, shape);
});

// matrix products
rule('gemm', (w, { a, b, options }) => {
  oneOf(w, 'a', a.dataType, FLOATS);
  sameType(w, [['a', a], ['b', b]]);
  rankIs(w, 'a', a, 2);
  rankIs(w, 'b', b, 2);
  const [m, ka] = options.aTranspose ? [a.shape[1], a.shape[0]] : a.shape;
  const [kb, n] = options.bTranspose ? [b.shape[1], b.shape[0]] : b.shape;
  if (!D.equal(ka, kb) && unified(ka, kb) === null) fail(w, `the inner dimensions of a [${a.shape}] and b [${b.shape}] differ`);
  if (options.c) {
    sameType(w, [['a', a], ['c', options.c]]);
    unidirectional(w, options.c.shape, [m, n], 'c');
  }
  return desc(a.dataType, [m, n]);
});
rule('matmul', (w, { a, b }) => {
  oneOf(w, 'a', a.dataType, FLOATS);
  sameType(w, [['a', a], ['b', b]]);
  if (a.shape.length < 2 || b.shape.length < 2) fail(w, 'a and b must have rank 2 or more');
  const [m, k] = a.shape.slice(-2);
  const [k2, n] = b.shape.slice(-2);
  if (!D.equal(k, k2) && unified(k, k2) === null) fail(w, `the inner dimensions of a [${a.shape}] and b [${b.shape}] differ`);
  return desc(a.dataType, [...broadcast(w, a.shape.slice(0, -2), b.shape.slice(0, -2)), m, n]);
});

// shape manipulation
/** newShape's entries must be valid dimensions (a dynamic one: at most 2^31 - 1 at its largest). */
function validShape(w, shape) {
  if (shape.includes(0)) fail(w, `newShape [${shape}] has a zero dimension`);
  shape.forEach((d) => {
    if (D.isDim(d) && !(D.upper(d) >= 1 && D.upper(d) <= 2 ** 31 - 1)) fail(w, `newShape [${shape}] has an invalid dimension ${d}`);
  });
}
rule('reshape', (w, { input, newShape }) => {
  validShape(w, newShape);
  if (!D.equal(size(newShape), size(input.shape))) fail(w, `newShape [${newShape}] does not hold the ${size(input.shape)} elements of [${input.shape}]`);
  return desc(input.dataType, newShape);
});
rule('expand', (w, { input, newShape }) => {
  validShape(w, newShape);
  unidirectional(w, input.shape, newShape, 'input'); // the spec: unidirectionally broadcast to newShape
  return desc(input.dataType, [...newShape]);
});
rule('transpose', (w, { input, options }) => {
  const rank = input.shape.length;
  const perm = options.permutation ?? [...Array(rank).keys()].reverse();
  if (perm.length !== rank) fail(w, `permutation [${perm}] must have ${rank} values`);
  checkAxes(w, perm, rank, 'permutation');
  return desc(input.dataType, perm.map((p) => input.shape[p]));
});
rule('concat', (w, { inputs, axis }) => {
  if (inputs.length === 0) fail(w, 'inputs must not be empty');
  const first = inputs[0];
  if (axis >= first.shape.length) fail(w, `axis ${axis} is out of range for rank ${first.shape.length}`);
  const shape = [...first.shape];
  inputs.slice(1).forEach((o, i) => {
    sameType(w, [['inputs[0]', first], [`inputs[${i + 1}]`, o]]);
    const mismatch = () => fail(w, `inputs[${i + 1}] of shape [${o.shape}] does not match [${first.shape}] outside axis ${axis}`);
    if (o.shape.length !== first.shape.length) mismatch();
    o.shape.forEach((d, j) => {
      if (j !== axis && !D.equal(d, shape[j])) shape[j] = unified(shape[j], d) ?? mismatch();
    });
    shape[axis] = D.add(shape[axis], o.shape[axis]);
  });
  return desc(first.dataType, shape);
});
rule('slice', (w, { input, starts, sizes, options }) => {
  const rank = input.shape.length;
  const strides = options.strides ?? Array(rank).fill(1);
  if (starts.length !== rank || sizes.length !== rank || strides.length !== rank) {
    fail(w, `starts, sizes and strides must have ${rank} values each`);
  }
  return desc(input.dataType, input.shape.map((d, i) => {
    if (sizes[i] === 0 || strides[i] === 0 || D.upper(sizes[i]) < 1) fail(w, 'sizes and strides must be positive');
    // the window must fit for every value the dimensions can take
    if (D.lower(starts[i]) < 0 || D.lower(D.sub(D.sub(d, starts[i]), sizes[i])) < 0) {
      fail(w, `dimension ${i}: start ${starts[i]} + size ${sizes[i]} exceeds ${d}`);
    }
    return D.ceilDiv(sizes[i], strides[i]);
  }));
});
rule('split', (w, { input, splits, options }) => {
  const { axis } = options;
  if (axis >= input.shape.length) fail(w, `axis ${axis} is out of range for rank ${input.shape.length}`);
  const d = input.shape[axis];
  fixed(w, `axis ${axis}`, d, 'split needs a fixed size along its axis');
  let parts;
  if (typeof splits === 'number') {
    if (splits === 0 || d % splits !== 0) fail(w, `splits ${splits} must evenly divide dimension ${axis} of size ${d}`);
    parts = Array(splits).fill(d / splits);
  } else {
    if (splits.includes(0) || splits.reduce((x, y) => x + y, 0) !== d) fail(w, `splits [${splits}] must be positive and sum to ${d}`);
    parts = splits;
  }
  return parts.map((p) => desc(input.dataType, input.shape.map((x, i) => (i === axis ? p : x))));
});
rule('pad', (w, { input, beginningPadding: b, endingPadding: e, options }) => {
    const rank = input.shape.length;
    if (b.length !== rank || e.length !== rank) fail(w, `beginningPadding and endingPadding must have ${rank} values each`);
    if (options.mode === 'reflection') {
      input.shape.forEach((d, i) => {
        if (b[i] >= D.lower(d) || e[i] >= D.lower(d)) fail(w, `reflection padding must be smaller than dimension ${i} (${d})`);
      });
    }
    return desc(input.dataType, input.shape.map((d, i) => D.add(d, b[i] + e[i])));
  });
rule('gather', (w, { input, indices, options }) => {
  oneOf(w, 'indices', indices.dataType, ['int32', 'uint32', 'int64']);
  const { axis } = options;
  if (axis >= input.shape.length) fail(w, `axis ${axis} is out of range for rank ${input.shape.length}`);
  return desc(input.dataType, [...input.shape.slice(0, axis), ...indices.shape, ...input.shape.slice(axis + 1)]);
});
/** gatherElements' and scatterElements' indices: the input's rank, and its shape outside `axis`. */
function elementIndices(w, input, indices, axis) {
  oneOf(w, 'indices', indices.dataType, ['int32', 'uint32', 'int64']);
  if (axis >= input.shape.length) fail(w, `axis ${axis} is out of range for rank ${input.shape.length}`);
  if (indices.shape.length !== input.shape.length || indices.shape.some((d, i) => i !== axis && !D.equal(d, input.shape[i]))) {
    fail(w, `indices [${indices.shape}] must match input [${input.shape}] outside axis ${axis}`);
  }
}
rule('gatherElements', (w, { input, indices, options }) => {
  elementIndices(w, input, indices, options.axis);
  return desc(input.dataType, indices.shape);
});
rule('gatherND', (w, { input, indices }) => {
  oneOf(w, 'indices', indices.dataType, ['int32', 'uint32', 'int64']);
  const k = indices.shape[indices.shape.length - 1];
  if (indices.shape.length < 1 || k > input.shape.length) fail(w, `indices [${indices.shape}] do not fit input [${input.shape}]`);
  return desc(input.dataType, [...indices.shape.slice(0, -1), ...input.shape.slice(k)]);
});
rule('scatterElements', (w, { input, indices, updates, options }) => {
  elementIndices(w, input, indices, options.axis);
  sameType(w, [['input', input], ['updates', updates]]);
  if (!same(indices.shape, updates.shape)) fail(w, `indices [${indices.shape}] and updates [${updates.shape}] differ`);
  return desc(input.dataType, input.shape);
});
rule('scatterND', (w, { input, indices, updates }) => {
  oneOf(w, 'indices', indices.dataType, ['int32', 'uint32', 'int64']);
  sameType(w, [['input', input], ['updates', updates]]);
  const k = indices.shape[indices.shape.length - 1];
  const want = [...indices.shape.slice(0, -1), ...input.shape.slice(k)];
  if (!same(updates.shape, want)) fail(w, `updates must have shape [${want}], got [${updates.shape}]`);
  return desc(input.dataType, input.shape);
});
rule('tile', (w, { input, repetitions }) => {
  if (repetitions.length !== input.shape.length || repetitions.includes(0)) {
    fail(w, `repetitions [${repetitions}] must have ${input.shape.length} positive values`);
  }
  return desc(input.dataType, input.shape.map((d, i) => D.mul(d, repetitions[i])));
});
rule('reverse', (w, { input, options }) => {
  checkAxes(w, options.axes ?? [], input.shape.length);
  return desc(input.dataType, input.shape);
});
rule('triangular', (w, { input }) => {
  if (input.shape.length < 2) fail(w, 'input must have rank 2 or more');
  return desc(input.dataType, input.shape);
});
const QUANTIZED = ['int4', 'uint4', 'int8', 'uint8', 'int32'];
for (const n of ['quantizeLinear', 'dequantizeLinear']) {
  rule(n, (w, { input, scale, zeroPoint }) => {
    oneOf(w, 'scale', scale.dataType, FLOATS);
    oneOf(w, 'zeroPoint', zeroPoint.dataType, QUANTIZED);
    if (n === 'quantizeLinear') sameType(w, [['input', input], ['scale', scale]]);
    else sameType(w, [['input', input], ['zeroPoint', zeroPoint]]);
    if (scale.shape.length !== input.shape.length || zeroPoint.shape.length !== input.shape.length) {
      fail(w, `scale and zeroPoint must have the rank of input (${input.shape.length})`);
    }
    if (!same(scale.shape, zeroPoint.shape)) fail(w, 'scale and zeroPoint must have the same shape');
    scale.shape.forEach((d, i) => { // block-wise broadcasting: each scale entry covers a block of the input
      if (D.isDim(input.shape[i]) ? d !== 1 : input.shape[i] % d !== 0) {
        fail(w, `scale of shape [${scale.shape}] is not block-wise broadcastable to [${input.shape}]`);
      }
    });
    return desc(n === 'quantizeLinear' ? zeroPoint.dataType : scale.dataType, input.shape);
  });
}

// recurrent networks
function rnnCheck(w, named, shapes) {
  const [first] = named;
  for (const [k, o] of named) {
    if (!o) continue;
    if (o.dataType !== first[1].dataType) fail(w, `${k} is ${o.dataType} but ${first[0]} is ${first[1].dataType}`);
    if (shapes[k]) shapeIs(w, k, o, shapes[k]);
  }
  oneOf(w, first[0], first[1].dataType, FLOATS);
}
rule('gru', (w, a) => {
  const o = a.options;
  const dirs = o.direction === 'both' ? 2 : 1;
  const h = a.hiddenSize;
  if (a.steps === 0 || h === 0) fail(w, 'steps and hiddenSize must be positive');
  rankIs(w, 'input', a.input, 3);
  const [steps, batch, inSize] = a.input.shape;
  if (steps !== a.steps) fail(w, `input has ${steps} steps, steps is ${a.steps}`);
  rnnCheck(w, [['input', a.input], ['weight', a.weight], ['recurrentWeight', a.recurrentWeight], ['bias', o.bias],
    ['recurrentBias', o.recurrentBias], ['initialHiddenState', o.initialHiddenState]],
  { weight: [dirs, 3 * h, inSize], recurrentWeight: [dirs, 3 * h, h], bias: [dirs, 3 * h], recurrentBias: [dirs, 3 * h],
    initialHiddenState: [dirs, batch, h] });
  if (o.activations && o.activations.length !== 2) fail(w, 'activations must have 2 functions');
  const out = [desc(a.input.dataType, [dirs, batch, h])];
  if (o.returnSequence) out.push(desc(a.input.dataType, [steps, dirs, batch, h]));
  return out;
});
rule('gruCell', (w, a) => {
  const h = a.hiddenSize;
  if (h === 0) fail(w, 'hiddenSize must be positive');
  rankIs(w, 'input', a.input, 2);
  const [batch, inSize] = a.input.shape;
  rnnCheck(w, [['input', a.input], ['weight', a.weight], ['recurrentWeight', a.recurrentWeight], ['hiddenState', a.hiddenState],
    ['bias', a.options.bias], ['recurrentBias', a.options.recurrentBias]],
  { weight: [3 * h, inSize], recurrentWeight: [3 * h, h], hiddenState: [batch, h], bias: [3 * h], recurrentBias: [3 * h] });
  if (a.options.activations && a.options.activations.length !== 2) fail(w, 'activations must have 2 functions');
  return desc(a.input.dataType, [batch, h]);
});
rule('lstm', (w, a) => {
  const o = a.options;
  const dirs = o.direction === 'both' ? 2 : 1;
  const h = a.hiddenSize;
  if (a.steps === 0 || h === 0) fail(w, 'steps and hiddenSize must be positive');
  rankIs(w, 'input', a.input, 3);
  const [steps, batch, inSize] = a.input.shape;
  if (steps !== a.steps) fail(w, `input has ${steps} steps, steps is ${a.steps}`);
  rnnCheck(w, [['input', a.input], ['weight', a.weight], ['recurrentWeight', a.recurrentWeight], ['bias', o.bias],
    ['recurrentBias', o.recurrentBias], ['peepholeWeight', o.peepholeWeight], ['initialHiddenState', o.initialHiddenState],
    ['initialCellState', o.initialCellState]],
  { weight: [dirs, 4 * h, inSize], recurrentWeight: [dirs, 4 * h, h], bias: [dirs, 4 * h], recurrentBias: [dirs, 4 * h],
    peepholeWeight: [dirs, 3 * h], initialHiddenState: [dirs, batch, h], initialCellState: [dirs, batch, h] });
  if (o.activations && o.activations.length !== 3) fail(w, 'activations must have 3 functions');
  const out = [desc(a.input.dataType, [dirs, batch, h]), desc(a.input.dataType, [dirs, batch, h])];
  if (o.returnSequence) out.push(desc(a.input.dataType, [steps, dirs, batch, h]));
  return out;
});
rule('lstmCell', (w, a) => {
  const o = a.options;
  const h = a.hiddenSize;
  if (h === 0) fail(w, 'hiddenSize must be positive');
  rankIs(w, 'input', a.input, 2);
  const [batch, inSize] = a.input.shape;
  rnnCheck(w, [['input', a.input], ['weight', a.weight], ['recurrentWeight', a.recurrentWeight], ['hiddenState', a.hiddenState],
    ['cellState', a.cellState], ['bias', o.bias], ['recurrentBias', o.recurrentBias], ['peepholeWeight', o.peepholeWeight]],
  { weight: [4 * h, inSize], recurrentWeight: [4 * h, h], hiddenState: [batch, h], cellState: [batch, h], bias: [4 * h],
    recurrentBias: [4 * h], peepholeWeight: [3 * h] });
  if (o.activations && o.activations.length !== 3) fail(w, 'activations must have 3 functions');
  return [desc(a.input.dataType, [batch, h]), desc(a.input.dataType, [batch, h])];
});

// ------------------------------------------------------------------ rank ranges

const MAX_RANK = 8; // every rank up to this compiles (tested with 0 and 8)

// Operands whose rank the spec restricts ("rankRange" in opSupportLimits): op -> {operand: [min, max]}
const RANKS = (() => {
  const r = {};
  const conv = { input: [4, 4], filter: [4, 4], bias: [1, 1], output: [4, 4] };
  Object.assign(r, { conv2d: conv, convTranspose2d: conv, resample2d: { input: [4, 4], output: [4, 4] },
    instanceNormalization: { input: [4, 4], scale: [1, 1], bias: [1, 1], output: [4, 4] },
    batchNormalization: { input: [1, MAX_RANK], mean: [1, 1], variance: [1, 1], scale: [1, 1], bias: [1, 1] },
    gemm: { a: [2, 2], b: [2, 2], c: [0, 2], output: [2, 2] },
    matmul: { a: [2, MAX_RANK], b: [2, MAX_RANK], output: [2, MAX_RANK] },
    triangular: { input: [2, MAX_RANK], output: [2, MAX_RANK] },
    gru: { input: [3, 3], weight: [3, 3], recurrentWeight: [3, 3], bias: [2, 2], recurrentBias: [2, 2],
      initialHiddenState: [3, 3], outputs: [3, 4] },
    gruCell: { input: [2, 2], weight: [2, 2], recurrentWeight: [2, 2], hiddenState: [2, 2], bias: [1, 1],
      recurrentBias: [1, 1], output: [2, 2] },
    lstm: { input: [3, 3], weight: [3, 3], recurrentWeight: [3, 3], bias: [2, 2], recurrentBias: [2, 2],
      peepholeWeight: [2, 2], initialHiddenState: [3, 3], initialCellState: [3, 3], outputs: [3, 4] },
    lstmCell: { input: [2, 2], weight: [2, 2], recurrentWeight: [2, 2], hiddenState: [2, 2], cellState: [2, 2],
      bias: [1, 1], recurrentBias: [1, 1], peepholeWeight: [1, 1], outputs: [2, 2] } });
  for (const n of ['averagePool2d', 'l2Pool2d', 'maxPool2d']) r[n] = { input: [4, 4], output: [4, 4] };
  for (const n of ['softmax', 'argMin', 'argMax', 'split', 'cumulativeSum']) r[n] = { input: [1, MAX_RANK] };
  r.concat = { inputs: [1, MAX_RANK], output: [1, MAX_RANK] };
  r.pad = { input: [1, MAX_RANK], output: [1, MAX_RANK] };
  for (const n of ['gather', 'gatherElements', 'scatterElements']) r[n] = { input: [1, MAX_RANK], indices: [0, MAX_RANK] };
  for (const n of ['gatherND', 'scatterND']) r[n] = { input: [1, MAX_RANK], indices: [1, MAX_RANK] };
  return r;
})();

/** {min, max} of an operand's rank for `op` (the spec's table; MAX_RANK where it sets none). */
function rankRange(op, operand) {
  const [min, max] = RANKS[op]?.[operand] ?? [0, MAX_RANK];
  return { min, max };
}

// ------------------------------------------------------------------ operations: signature + rule

// name -> {name, params: [[name, WebIDL type]], options: {name: {type, default?}}, infer}, for each
// operation with both a signature and a rule (test/signatures.test.js: that is every one of each)
const OPS = Object.fromEntries(Object.entries(SIGNATURES.operations).filter(([name]) => RULES[name])
  .map(([name, { params, options }]) => [name, { name, params, options: options ?? {}, infer: RULES[name] }]));

module.exports = { OPS, RULES, MAX_RANK, rankRange, size };
