'use strict';
// A corpus of calls of each MLGraphBuilder operation, valid and invalid, derived from its signature
// (lib/signatures.json, written from Estuary's WebNN registry) and valid seed calls
// (test-support/seeds.js). test/corpus.test.js replays every call through the JS builder and
// Estuary's importer (test-support/agreement.js): both must accept it with the same descriptors,
// or both refuse it. From each seed:
//   - the seed, with no options, with {} and with a label;
//   - each option set to its dictionary default (`sameAs: 'seed'`: the seed's result, too);
//   - each option operand left out, and the last parameter when it is not an operand;
//   - each other parameter and option given values of its WebIDL type: the valid ones around the
//     first operand's rank and shape (axes, windows, permutations, enum values, ...) and ones WebIDL
//     refuses (out of range, not a sequence, not an enumeration value, not finite; a boolean, an
//     MLNumber or a string takes any JSON value, so those have none);
//   - each operand (and option operand) given another rank (0, one less, one more), one dimension
//     grown or set to 1 (broadcasting), another data type, or something that is not an operand.
// A case: {op, what, seed (the index of the seed it varies), isSeed?, sameAs?, inputs: {name:
// descriptor}, args: [[parameter, value]]}.
const { DATA_TYPES, ENUMS } = require('../lib/webidl');

const NOT_AN_OPERAND = 'not-an-operand'; // no input has this name: the JS side sees a string
const UINT_MAX = 2 ** 32 - 1;
// 4-bit types are refused by input() (opSupportLimits), before any operation sees them
const OPERAND_TYPES = DATA_TYPES.filter((t) => !t.endsWith('4'));

const uniq = (values) => [...new Map(values.map((v) => [JSON.stringify(v), v])).values()];
const range = (n, from = 0) => Array.from({ length: Math.max(0, n - from) }, (_, i) => from + i);
const without = (o, k) => Object.fromEntries(Object.entries(o).filter(([x]) => x !== k));

/** Sequences of unsigned longs around a shape: axes, permutations, windows, paddings, shapes. */
function sequences(shape) {
  const r = shape.length;
  const size = shape.reduce((a, b) => a * b, 1);
  return uniq([[], [0], [1], [Math.max(r - 1, 0)], [r], range(r), range(r).reverse(), range(r, 1), [0, 0],
    [1, 1], [2, 2], [1, 2], [2, 1], [3, 3], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 1], [1, 0, 1, 0], [2, 2, 2, 2],
    Array(r).fill(0), Array(r).fill(1), Array(r).fill(2), shape, [...shape].reverse(), [size], [1, ...shape],
    shape.slice(1), shape.map((d) => d - 1), ...(size % 2 === 0 ? [[size / 2, 2]] : [])]);
}

/** Values of a WebIDL type to give a parameter: {valid: [...], invalid: [...]} (invalid: WebIDL
 * refuses them; valid ones may still break the operation's rules). */
function candidates(type, shape) {
  const r = shape.length;
  const inner = /^sequence<(.+)>$/.exec(type)?.[1];
  if (ENUMS[type]) return { valid: ENUMS[type], invalid: ['bogus', ENUMS[type][0].toUpperCase()] };
  if (inner && ENUMS[inner]) {
    const values = ENUMS[inner];
    return { valid: uniq([[], ...values.flatMap((v) => [[v], [v, v], [v, v, v]]), values.slice(0, 2), values]),
      invalid: [values[0], ['bogus'], 3] };
  }
  const uints = { valid: uniq([0, 1, 2, 3, 4, Math.max(r - 1, 0), r, UINT_MAX]), invalid: [-1, UINT_MAX + 1, 'x'] };
  const uintSequences = { valid: sequences(shape), invalid: [3, [-1], [UINT_MAX + 1], ['x']] };
  switch (type) {
    case 'unsigned long': return uints;
    case 'long': return { valid: [-3, -1, 0, 1, 2, 3], invalid: [2 ** 31, -(2 ** 31) - 1, 'x'] };
    case 'float': return { valid: [0, 0.5, -1, 2, 1e-3], invalid: ['x', 1e40] }; // 1e40 rounds to infinity
    case 'double': return { valid: [0, 0.5, -1, 2, 1e-3, 1e40], invalid: ['x'] };
    case 'boolean': return { valid: [true, false], invalid: [] };
    case 'MLNumber': return { valid: [0, -1, 1, 2.5, 6, -6], invalid: [] }; // unrestricted: every number
    case 'USVString': return { valid: ['', 'a label'], invalid: [] };
    case 'sequence<unsigned long>': case 'sequence<MLDimension>': return uintSequences;
    case 'sequence<float>':
      return { valid: [[1, 1], [2, 2], [0.5, 2], [1.5, 1], [3, 0.5], [0, 1], [-1, 1], [1], [1, 1, 1]],
        invalid: [3, ['x', 1], [1e40, 1]] };
    case '(unsigned long or sequence<unsigned long>)':
      return { valid: [...uints.valid, ...uintSequences.valid], invalid: [-1, [-1], ['x']] };
    default: throw new Error(`the corpus has no values of the type ${type}`);
  }
}

/** Descriptors near `d`: other ranks, a dimension grown or set to 1, other data types. */
function mutations(d) {
  const s = d.shape;
  const shapes = [[], s.slice(1), [1, ...s], [2, ...s], [...s, 1], ...s.map((x, i) => s.map((y, j) => (i === j ? y + 1 : y))),
    ...s.map((x, i) => s.map((y, j) => (i === j ? 1 : y)))];
  return uniq([...shapes.filter((x) => JSON.stringify(x) !== JSON.stringify(s)).map((shape) => ({ ...d, shape })),
    ...OPERAND_TYPES.filter((x) => x !== d.dataType).map((dataType) => ({ ...d, dataType })), NOT_AN_OPERAND]);
}

const isOperand = (type) => type === 'MLOperand' || type === 'sequence<MLOperand>';

/** The corpus of operation `op` with signature `sig` and seeds `seeds` ([{name: value}]); each case
 * names the seed it varies (`seed`: its index). */
function corpus(op, sig, seeds) {
  const cases = seeds.flatMap((seed, k) => fromSeed(op, sig, seed).map((c) => ({ ...c, seed: k,
    what: seeds.length > 1 ? `seed ${k + 1}: ${c.what}` : c.what })));
  const seen = new Set(); // the first of equal calls (a seed before the seed without options)
  return cases.filter((c) => {
    const key = JSON.stringify([c.inputs, c.args]);
    return !seen.has(key) && seen.add(key);
  });
}

function fromSeed(op, sig, seed) {
  const options = sig.options ?? {};
  const positional = Object.fromEntries(sig.params.map(([p]) => [p, seed[p]]));
  const given = Object.fromEntries(Object.entries(seed).filter(([k]) => k in options));
  const optionOperands = Object.fromEntries(Object.entries(given).filter(([k]) => options[k].type === 'MLOperand'));
  const first = sig.params.find(([, type]) => isOperand(type));
  const shape = (Array.isArray(seed[first[0]]) ? seed[first[0]][0] : seed[first[0]]).shape;
  const cases = [];
  // a call: its positional values and options by name, operands as descriptors
  const add = (what, values, opts, extra = {}) => cases.push(toCase(op, sig, values, opts, { what, ...extra }));

  add('seed', positional, given, { isSeed: true });
  add('seed, no options', positional, {}, { options: false });
  add('seed, options {}', positional, given, { options: true });
  add('seed, a label', positional, { ...given, label: 'seed' });
  for (const [k, { default: d }] of Object.entries(options)) {
    if (d !== undefined && !(k in given)) add(`options.${k} = its default`, positional, { ...given, [k]: d }, { sameAs: 'seed' });
  }
  for (const k of Object.keys(optionOperands)) add(`without options.${k}`, positional, without(given, k));
  const [last, lastType] = sig.params[sig.params.length - 1];
  if (!isOperand(lastType)) add(`without ${last}`, without(positional, last), {}, { options: false });

  const vary = (name, type, set) => {
    const { valid, invalid } = candidates(type, shape);
    for (const v of [...valid, ...invalid]) set(`${name} = ${JSON.stringify(v)}`, v);
  };
  for (const [p, type] of sig.params) {
    if (!isOperand(type)) vary(p, type, (what, v) => add(what, { ...positional, [p]: v }, given));
  }
  for (const [k, { type }] of Object.entries(options)) {
    if (!isOperand(type) && k !== 'label') vary(`options.${k}`, type, (what, v) => add(what, positional, { ...given, [k]: v }));
  }

  for (const [p, type] of sig.params) {
    if (type === 'MLOperand') {
      for (const d of mutations(seed[p])) add(`${p}: ${describe(d)}`, { ...positional, [p]: d }, given);
    } else if (type === 'sequence<MLOperand>') {
      const list = seed[p];
      const withList = (other) => ({ ...positional, [p]: other });
      list.forEach((x, i) => {
        for (const d of mutations(x)) add(`${p}[${i}]: ${describe(d)}`, withList(list.map((y, j) => (i === j ? d : y))), given);
      });
      for (const other of [[], [list[0]], [...list, list[0]]]) add(`${p}: ${other.length} operands`, withList(other), given);
    }
  }
  for (const k of Object.keys(optionOperands)) {
    for (const d of mutations(seed[k])) add(`options.${k}: ${describe(d)}`, positional, { ...given, [k]: d });
  }
  return cases;
}

function describe(d) {
  return d === NOT_AN_OPERAND ? 'not an operand' : `${d.dataType} [${d.shape}]`;
}

/** A call as a case: operands become inputs named in0, in1, ... (`extra.options`: true gives the
 * options argument even when empty, false leaves it out). */
function toCase(op, sig, values, opts, { options: give, ...extra }) {
  const inputs = {};
  const operand = (d) => {
    if (d === NOT_AN_OPERAND) return d;
    const name = `in${Object.keys(inputs).length}`;
    inputs[name] = d;
    return name;
  };
  const value = (type, v) => (type === 'MLOperand' ? operand(v) : type === 'sequence<MLOperand>' ? v.map(operand) : v);
  const args = sig.params.filter(([p]) => values[p] !== undefined).map(([p, type]) => [p, value(type, values[p])]);
  const options = Object.fromEntries(Object.entries(opts).map(([k, v]) => [k, value(sig.options[k].type, v)]));
  if (give !== false && (give || Object.keys(options).length)) args.push(['options', options]);
  return { op, inputs, args, ...extra };
}

module.exports = { corpus, candidates, mutations };
