'use strict';
// Dynamic dimensions (WebNN's MLDynamicDimension {name, maxSize}) for the builder's shape rules:
// the JavaScript twin of Estuary's estuary.base.dims, because the builder validates synchronously
// and must reach the same shapes, in the same text, as Estuary's importer.
//
// A dimension is a number or a Dim: an expression over symbols (each between 1 and its maxSize)
// in a canonical form, a sum of monomials with integer coefficients over atoms, an atom being a
// symbol or a floor division of an expression by a constant; arithmetic gives a number when the
// result is constant. `String(d)` is Estuary's text form (`2*seq + 1`, `(h - 1)//2 + 1`), so a
// derived dimension reads the same on both sides; test/dynamic.test.js holds the two together.
// A Unifier records what the rules learn: two symbols that meet where they must be equal are
// bound one to the other, and derived dimensions that may be below 1 become run-time checks.

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

class Sym {
  constructor(name, lo, hi) {
    this.name = name;
    this.lo = lo;
    this.hi = hi;
    this.key = name;
  }
}

class FloorDiv { // num // den, den > 1 not dividing num exactly
  constructor(num, den) {
    this.num = num;
    this.den = den;
    this.key = num.sym ? `${num}//${den}` : `(${num})//${den}`;
  }
}

const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
const cmpLists = (a, b) => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const c = cmp(a[i], b[i]);
    if (c) return c;
  }
  return a.length - b.length;
};
const monoKey = (m) => m.map((a) => a.key).join('*');
const floorDiv = (a, k) => Math.floor(a / k);
const floorMod = (a, k) => ((a % k) + k) % k;

class Dim {
  /** terms: [[atoms (sorted by key), coefficient]]; build one with symbol() and arithmetic. */
  constructor(terms) {
    this.terms = terms.filter(([, c]) => c).sort(([a], [b]) => (a.length - b.length) || cmpLists(a.map((x) => x.key), b.map((x) => x.key)));
    this.text = render(this.terms);
  }

  get sym() {
    if (this.terms.length === 1 && this.terms[0][1] === 1 && this.terms[0][0].length === 1) {
      const atom = this.terms[0][0][0];
      return atom instanceof Sym ? atom : null;
    }
    return null;
  }

  toString() { return this.text; }

  toJSON() { return this.text; }
}

function render(terms) {
  const parts = [];
  const ordered = [...terms].sort(([a], [b]) => (b.length - a.length) || cmpLists(a.map((x) => x.key), b.map((x) => x.key)));
  for (const [m, c] of ordered) { // the constant last
    let body;
    if (m.length === 0) {
      body = String(Math.abs(c));
    } else {
      const wrap = Math.abs(c) !== 1 || m.length > 1; // a floor division inside a product gets parentheses
      const atoms = m.map((a) => (wrap && a instanceof FloorDiv ? `(${a.key})` : a.key)).join('*');
      body = Math.abs(c) === 1 ? atoms : `${Math.abs(c)}*${atoms}`;
    }
    if (!parts.length) parts.push(c > 0 ? body : `-${body}`);
    else parts.push(c > 0 ? `+ ${body}` : `- ${body}`);
  }
  return parts.join(' ');
}

const isDim = (v) => v instanceof Dim;

function termsOf(v) {
  return isDim(v) ? v.terms : [[[], v]];
}

/** The value with these terms: a number when only a constant remains. */
function make(terms) {
  const merged = new Map();
  for (const [m, c] of terms) {
    const k = monoKey(m);
    const have = merged.get(k);
    merged.set(k, have ? [m, have[1] + c] : [m, c]);
  }
  const kept = [...merged.values()].filter(([, c]) => c);
  if (!kept.length) return 0;
  if (kept.length === 1 && kept[0][0].length === 0) return kept[0][1];
  return new Dim(kept);
}

function symbol(name, lo, hi) {
  return new Dim([[[new Sym(name, lo, hi)], 1]]);
}

const add = (a, b) => (!isDim(a) && !isDim(b) ? a + b : make([...termsOf(a), ...termsOf(b)]));
const neg = (a) => (isDim(a) ? make(a.terms.map(([m, c]) => [m, -c])) : -a);
const sub = (a, b) => add(a, neg(b));

function mul(a, b) {
  if (!isDim(a) && !isDim(b)) return a * b;
  const out = [];
  for (const [m1, c1] of termsOf(a)) {
    for (const [m2, c2] of termsOf(b)) {
      out.push([[...m1, ...m2].sort((x, y) => cmp(x.key, y.key)), c1 * c2]);
    }
  }
  return make(out);
}

/** floor(a / k) for a constant k > 0. */
function div(a, k) {
  if (isDim(k)) throw new TypeError(`cannot divide ${a} by the dynamic ${k}`);
  if (!isDim(a)) return floorDiv(a, k);
  if (k === 1) return a;
  const whole = [];
  const rest = [];
  for (const [m, c] of a.terms) {
    if (m.length === 0) { // an integer plus c/k: the constant's floor and remainder split
      whole.push([m, floorDiv(c, k)]);
      if (floorMod(c, k)) rest.push([m, floorMod(c, k)]);
    } else if (floorMod(c, k) === 0) {
      whole.push([m, c / k]);
    } else {
      rest.push([m, c]);
    }
  }
  const remainder = make(rest);
  if (!isDim(remainder) || (lower(remainder) >= 0 && upper(remainder) < k)) return make(whole);
  return add(make(whole), new Dim([[[new FloorDiv(remainder, k)], 1]]));
}

const ceilDiv = (a, k) => div(add(a, k - 1), k);

function atomBounds(atom) {
  if (atom instanceof Sym) return [atom.lo, atom.hi];
  return [floorDiv(lower(atom.num), atom.den), floorDiv(upper(atom.num), atom.den)];
}

function bounds(v) {
  if (!isDim(v)) return [v, v];
  let lo = 0;
  let hi = 0;
  for (const [m, c] of v.terms) {
    let a = 1;
    let b = 1;
    for (const atom of m) {
      const [x, y] = atomBounds(atom);
      const p = [a * x, a * y, b * x, b * y];
      [a, b] = [Math.min(...p), Math.max(...p)];
    }
    lo += Math.min(c * a, c * b);
    hi += Math.max(c * a, c * b);
  }
  return [lo, hi];
}

const lower = (v) => bounds(v)[0];
const upper = (v) => bounds(v)[1];

/** Every symbol of a value (inside floor divisions too), name -> Sym. */
function symbols(v, out = new Map()) {
  if (!isDim(v)) return out;
  for (const [m] of v.terms) {
    for (const atom of m) {
      if (atom instanceof Sym) out.set(atom.name, atom);
      else symbols(atom.num, out);
    }
  }
  return out;
}

/** The value for symbol values `env` (a Map or object name -> number). */
function evaluate(v, env) {
  if (!isDim(v)) return v;
  const get = (name) => (env instanceof Map ? env.get(name) : env[name]);
  let total = 0;
  for (const [m, c] of v.terms) {
    let x = c;
    for (const atom of m) x *= atom instanceof Sym ? get(atom.name) : floorDiv(evaluate(atom.num, env), atom.den);
    total += x;
  }
  return total;
}

/** The value with symbols replaced by `env`'s values (a Map name -> number or Dim). */
function substitute(v, env) {
  if (!isDim(v)) return v;
  let total = 0;
  for (const [m, c] of v.terms) {
    let x = c;
    for (const atom of m) {
      x = mul(x, atom instanceof Sym ? (env.get(atom.name) ?? new Dim([[[atom], 1]])) : div(substitute(atom.num, env), atom.den));
    }
    total = add(total, x);
  }
  return total;
}

const equal = (a, b) => (isDim(a) && isDim(b) ? a.text === b.text : a === b);
const boundsText = (syms) => [...syms.values()].sort((a, b) => cmp(a.name, b.name)).map((s) => `${s.name}=${s.lo}..${s.hi}`).join(', ');
const showShape = (shape) => `[${shape.map(String).join(', ')}]`;

// ------------------------------------------------------------------ text form

const TOKEN = /\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\/\/|[-+*()]))/y;

/** One expression in the text form; its symbols must be in `table` (name -> Sym). */
function parse(text, table) {
  const tokens = [];
  const source = String(text).trim();
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < source.length) {
    const at = TOKEN.lastIndex;
    const m = TOKEN.exec(source);
    if (!m || TOKEN.lastIndex === at) throw new TypeError(`cannot read dimension '${source}' at '${source.slice(at)}'`);
    tokens.push(m[1] ?? m[2] ?? m[3]);
  }
  const state = { t: tokens, i: 0, table, source };
  const v = parseSum(state);
  if (state.i !== tokens.length) throw new TypeError(`cannot read dimension '${source}'`);
  return v;
}

function parseSum(s) {
  let sign = 1;
  if (s.t[s.i] === '-') { sign = -1; s.i++; }
  let total = mul(parseProduct(s), sign);
  while (s.t[s.i] === '+' || s.t[s.i] === '-') {
    const op = s.t[s.i++];
    const v = parseProduct(s);
    total = op === '+' ? add(total, v) : sub(total, v);
  }
  return total;
}

function parseProduct(s) {
  let v = parseAtom(s);
  while (s.t[s.i] === '*' || s.t[s.i] === '//') {
    const op = s.t[s.i++];
    const w = parseAtom(s);
    if (op === '*') v = mul(v, w);
    else if (isDim(w) || w <= 0) throw new TypeError(`cannot read dimension '${s.source}': division by ${w}`);
    else v = div(v, w);
  }
  return v;
}

function parseAtom(s) {
  const tok = s.t[s.i++];
  if (tok === undefined) throw new TypeError(`cannot read dimension '${s.source}': it ends early`);
  if (tok === '(') {
    const v = parseSum(s);
    if (s.t[s.i++] !== ')') throw new TypeError(`cannot read dimension '${s.source}': unbalanced parentheses`);
    return v;
  }
  if (/^\d+$/.test(tok)) return Number(tok);
  if (IDENTIFIER.test(tok)) {
    const sym = s.table.get(tok);
    if (!sym) throw new TypeError(`dimension '${s.source}' uses '${tok}', which no input declares`);
    return new Dim([[[sym], 1]]);
  }
  throw new TypeError(`cannot read dimension '${s.source}' at '${tok}'`);
}

// ------------------------------------------------------------------ unification

class Unifier {
  constructor() {
    this.bindings = new Map(); // symbol name -> the value it equals
    this.checks = new Map(); // text -> Dim that must be at least 1 at run time
  }

  resolve(v) {
    for (let i = 0; i <= this.bindings.size; i++) {
      if (!isDim(v) || ![...symbols(v).keys()].some((n) => this.bindings.has(n))) return v;
      v = substitute(v, this.bindings);
    }
    return v;
  }

  /** The common value of a and b when they can be made equal (recording how), else null. */
  unify(a, b) {
    a = this.resolve(a);
    b = this.resolve(b);
    if (equal(a, b)) return a;
    const sa = isDim(a) ? a.sym : null;
    const sb = isDim(b) ? b.sym : null;
    if (sa && sb) { // the first operand's symbol stays
      if (Math.max(sa.lo, sb.lo) > Math.min(sa.hi, sb.hi)) return null;
      this.bindings.set(sb.name, a);
      return a;
    }
    for (const [s, other] of [[sa, b], [sb, a]]) {
      if (s && !(isDim(other) && symbols(other).has(s.name))) {
        if (lower(other) > s.hi || upper(other) < s.lo) return null;
        this.bindings.set(s.name, other);
        return other;
      }
    }
    return null;
  }

  /** Record that v must be at least 1; false when it never can be. */
  needPositive(v) {
    v = this.resolve(v);
    if (!isDim(v)) return v >= 1;
    if (upper(v) < 1) return false;
    if (lower(v) < 1) this.checks.set(v.text, v);
    return true;
  }

  /** Error text when symbol values `env` (name -> number) break a binding or a check, else null. */
  violation(env) {
    for (const [name, value] of this.bindings) {
      if (!env.has(name) || [...symbols(value).keys()].some((n) => !env.has(n))) continue;
      const want = evaluate(value, env);
      if (env.get(name) !== want) return `${name} is ${env.get(name)}, but the graph needs ${name} = ${value} = ${want} (the two meet in one operation)`;
    }
    for (const check of this.checks.values()) {
      if ([...symbols(check).keys()].some((n) => !env.has(n))) continue;
      const v = evaluate(check, env);
      if (v < 1) return `the inputs are too small for the graph: an intermediate dimension ${check} would be ${v}`;
    }
    return null;
  }
}

let current = null; // the Unifier of the operation being inferred

/** Run fn with `unifier` as the current one (same() unifies there). */
function unifying(unifier, fn) {
  const before = current;
  current = unifier;
  try {
    return fn();
  } finally {
    current = before;
  }
}

/** The common value of two dimensions that must be equal (unified in the current Unifier), else null. */
function same(a, b) {
  if (equal(a, b)) return a;
  if (current === null || (!isDim(a) && !isDim(b))) return null;
  return current.unify(a, b);
}

// ------------------------------------------------------------------ MLDimension

/** A dimension as MLOperand.shape reports it: a number, or {name, maxSize} (a derived dimension's
 * name is its expression). */
function toMLDimension(d) {
  if (!isDim(d)) return d;
  return Object.freeze({ name: d.sym ? d.sym.name : d.text, maxSize: upper(d) });
}

module.exports = {
  Dim, Sym, IDENTIFIER, Unifier, symbol, isDim, add, sub, mul, div, ceilDiv, lower, upper, symbols, evaluate,
  equal, same, unifying, parse, boundsText, showShape, toMLDimension,
};
