'use strict';
// MLGraphBuilder's operation signatures and the WebIDL conversion of their arguments. The
// signatures (lib/signatures.json: each operation's positional parameters and options with their
// WebIDL types, the options' defaults, the enumerations' values) are written from Estuary's WebNN
// registry by scripts/webnn_signatures.py, and a test fails when the file is stale: what a method
// takes is stated once, in Python. Conversions are WebIDL's: [EnforceRange] integers (every
// integer of the operations' signatures), restricted float and double, enumerations, sequences.
// MLOperand arguments are the builder's to check (lib/api.js). `MLDimension` is Estuary's entry of
// newShape / starts / sizes: an unsigned long, or a dynamic dimension over the symbols the graph's
// inputs declare (lib/dims.js).
const D = require('./dims');
const SIGNATURES = require('./signatures.json');

const ENUMS = SIGNATURES.enums;
const UINT_MAX = 2 ** 32 - 1;

class Failure extends TypeError {}

function fail(where, message) {
  throw new Failure(`${where}: ${message}`);
}

function toNumber(v, where) {
  if (typeof v === 'bigint' || typeof v === 'symbol') fail(where, `${String(v)} is not a number`);
  return Number(v);
}

function toInteger(v, where, lo, hi) {
  let x = toNumber(v, where);
  if (!Number.isFinite(x)) fail(where, `${String(v)} is not a finite integer`);
  x = Math.trunc(x);
  if (x < lo || x > hi) fail(where, `${x} is outside the range [${lo}, ${hi}]`);
  return x;
}

/** A restricted float (single precision) or double: finite, and a float must stay finite rounded. */
function toFinite(v, where, single) {
  const x = toNumber(v, where);
  const y = single ? Math.fround(x) : x;
  if (!Number.isFinite(y)) fail(where, `${String(v)} is not a finite ${single ? 'float' : 'double'}`);
  return y;
}

function toSequence(v, where) {
  if (v === null || typeof v !== 'object' || typeof v[Symbol.iterator] !== 'function') {
    fail(where, `expected a sequence, got ${v === null ? 'null' : typeof v}`);
  }
  return Array.from(v);
}

function enumValue(values, v, where) {
  const s = String(v);
  if (!values.includes(s)) fail(where, `'${s}' is not one of ${values.map((x) => `'${x}'`).join(', ')}`);
  return s;
}

/** An MLDimension: an unsigned long, or {name} / {expression} / what MLOperand.shape reports over
 * the declared symbols (`table`: name -> Sym). */
function dimension(x, where, table) {
  if (x === null || typeof x !== 'object') return toInteger(x, where, 0, UINT_MAX);
  const text = x.expression ?? x.name;
  if (typeof text !== 'string') fail(where, 'a dynamic dimension is {name: symbol} or {expression: text}');
  if (x.expression === undefined && D.IDENTIFIER.test(text) && !table.has(text)) {
    fail(where, `names '${text}', which no input declares (declared: ${[...table.keys()].sort().join(', ') || 'none'})`);
  }
  try {
    return D.parse(text, table); // a symbol's name, or a derived dimension's expression
  } catch (e) {
    return fail(where, e.message);
  }
}

/** A dimension as the JSON form records it: a number, {name} or {expression}. */
function dimensionJSON(d) {
  if (!D.isDim(d)) return d;
  return d.sym ? { name: d.sym.name } : { expression: d.text };
}

const SCALARS = {
  'unsigned long': (v, w) => toInteger(v, w, 0, UINT_MAX),
  long: (v, w) => toInteger(v, w, -(2 ** 31), 2 ** 31 - 1),
  float: (v, w) => toFinite(v, w, true),
  double: (v, w) => toFinite(v, w, false),
  boolean: (v) => Boolean(v),
  MLNumber: (v, w) => (typeof v === 'bigint' ? v : toNumber(v, w)), // (bigint or unrestricted double)
  USVString: (v) => String(v),
  MLDimension: dimension,
  // a union takes a sequence for an object, else the number
  '(unsigned long or sequence<unsigned long>)': (v, w) => convert(v !== null && typeof v === 'object'
    ? 'sequence<unsigned long>' : 'unsigned long', v, w),
};

/** Whether `convert` knows the WebIDL `type`. */
function convertible(type) {
  const inner = /^sequence<(.+)>$/.exec(type)?.[1];
  return inner ? convertible(inner) : Boolean(ENUMS[type] || SCALARS[type]);
}

/** `v` converted to the WebIDL `type` (any but MLOperand), or a TypeError naming `where`;
 * `table`: the declared symbols, for MLDimension. */
function convert(type, v, where, table) {
  const inner = /^sequence<(.+)>$/.exec(type)?.[1];
  if (inner) return toSequence(v, where).map((x, i) => convert(inner, x, `${where}[${i}]`, table));
  if (ENUMS[type]) return enumValue(ENUMS[type], v, where);
  if (!SCALARS[type]) throw new Error(`${where}: no WebIDL conversion for the type ${type}`);
  return SCALARS[type](v, where, table);
}

module.exports = { SIGNATURES, ENUMS, DATA_TYPES: ENUMS.MLOperandDataType, Failure, fail, convert, convertible,
  enumValue, toSequence, dimensionJSON };
