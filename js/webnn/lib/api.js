'use strict';
// The WebNN interfaces: ML, MLContext, MLGraphBuilder, MLOperand, MLGraph, MLTensor. Everything
// the spec validates is validated here, synchronously, with the spec's exception types; the
// Estuary worker (lib/bridge.js) sees only well-formed requests: build() sends the graph in
// Estuary's WebNN JSON form with constants as binary buffers, and tensors live in the worker.
const { OPS, MAX_RANK, rankRange, size } = require('./ops');
const { DATA_TYPES, Failure, fail, convert, enumValue, dimensionJSON, toSequence } = require('./webidl');
const D = require('./dims');
const { getBridge } = require('./bridge');

const BYTES = { float32: 4, float16: 2, int32: 4, uint32: 4, int64: 8, uint64: 8, int8: 1, uint8: 1, int4: 0.5, uint4: 0.5 };
const TYPED = { float32: Float32Array, float16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array,
  uint64: BigUint64Array, int8: Int8Array, uint8: Uint8Array };
const MAX_TENSOR_BYTES = 2 ** 31;
const internal = Symbol('estuary-webnn');

const byteLength = (d) => Math.ceil(size(d.shape) * BYTES[d.dataType]);
// a shape with dynamic dimensions at their smallest / largest (numbers)
const leastBytes = (d) => Math.ceil(d.shape.reduce((a, x) => a * D.lower(x), 1) * BYTES[d.dataType]);
const mostBytes = (d) => Math.ceil(d.shape.reduce((a, x) => a * D.upper(x), 1) * BYTES[d.dataType]);
const isDynamic = (shape) => shape.some(D.isDim);

function invalidState(message) {
  return new DOMException(message, 'InvalidStateError');
}

function dictionary(v, where) {
  if (v === undefined || v === null) return {};
  if (typeof v !== 'object' && typeof v !== 'function') throw new TypeError(`${where}: expected a dictionary, got ${typeof v}`);
  return v;
}

/** The bytes of an AllowSharedBufferSource (a copy), or a TypeError. */
function bytesOf(source, where) {
  if (source instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && source instanceof SharedArrayBuffer)) {
    return new Uint8Array(source.slice(0));
  }
  if (ArrayBuffer.isView(source)) {
    return new Uint8Array(source.buffer.slice(source.byteOffset, source.byteOffset + source.byteLength));
  }
  throw new TypeError(`${where}: expected an ArrayBuffer or an ArrayBufferView`);
}

function viewOf(source) { // a view on the caller's memory, for readTensor(tensor, outputData)
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  return new Uint8Array(source);
}

/** An MLOperandDescriptor converted and checked ("check dimensions"). With `symbols` (an input's
 * descriptor: the builder's symbols, name -> Sym) a dimension may be an MLDynamicDimension
 * {name, maxSize}, a Dim here; the size check then counts it at its maxSize. */
function operandDescriptor(v, where, symbols) {
  const d = dictionary(v, where);
  if (d.dataType === undefined) throw new TypeError(`${where}: the descriptor needs a dataType`);
  if (d.shape === undefined) throw new TypeError(`${where}: the descriptor needs a shape`);
  const dataType = enumValue(DATA_TYPES, d.dataType, `${where}: dataType`);
  const seen = symbols && new Map(symbols); // a name used twice in one shape keeps its maxSize too
  const shape = Array.from(toSequence(d.shape, `${where}: shape`), (x, i) => (x !== null && typeof x === 'object'
    ? dynamicDimension(x, `${where}: shape[${i}]`, seen) : convert('unsigned long', x, `${where}: shape[${i}]`)));
  if (shape.includes(0)) throw new TypeError(`${where}: shape [${shape}] has a zero dimension`);
  if (shape.length > MAX_RANK) throw new TypeError(`${where}: shape [${shape}] has rank ${shape.length}, more than ${MAX_RANK}`);
  const result = { dataType, shape };
  if (!Number.isSafeInteger(D.upper(size(shape))) || mostBytes(result) > MAX_TENSOR_BYTES) {
    throw new TypeError(`${where}: shape [${shape}] is larger than the ${MAX_TENSOR_BYTES} bytes a tensor may hold`);
  }
  return result;
}

/** An MLDynamicDimension of an input's shape as a symbol (1..maxSize); a name already declared
 * keeps its maxSize. The name must be an identifier (Estuary's dimension text form). */
function dynamicDimension(x, where, symbols) {
  if (!symbols) throw new TypeError(`${where}: only graph inputs take dynamic dimensions; this shape must be fixed`);
  if (x.name === undefined) throw new TypeError(`${where}: an MLDynamicDimension needs a name`);
  if (x.maxSize === undefined) throw new TypeError(`${where}: an MLDynamicDimension needs a maxSize`);
  const name = String(x.name);
  const maxSize = convert('unsigned long', x.maxSize, `${where}: maxSize`);
  if (!D.IDENTIFIER.test(name)) throw new TypeError(`${where}: the name '${name}' is not an identifier (letters, digits, '_', not starting with a digit)`);
  if (maxSize === 0) throw new TypeError(`${where}: maxSize of '${name}' must be positive`);
  const have = symbols.get(name);
  const hi = Math.min(maxSize, 2 ** 31);
  if (have && have.hi !== hi) {
    throw new TypeError(`${where}: '${name}' has maxSize ${maxSize}, but an earlier dimension gave it maxSize ${have.hi}`);
  }
  const dim = D.symbol(name, 1, hi);
  symbols.set(name, dim.sym);
  return dim;
}

function supported(context, kind, dataType, where) {
  const types = context[internal].limits[kind].dataTypes;
  if (!types.includes(dataType)) throw new TypeError(`${where}: data type ${dataType} is not supported (${types.join(', ')})`);
}

// ------------------------------------------------------------------ ML

class ML {
  /** createContext(options): {powerPreference, accelerated}; runs on Estuary's llvm-cpu target (the
   * ESTUARY_WEBNN_TARGET environment variable chooses another, e.g. vulkan-spirv). */
  async createContext(options) {
    const o = dictionary(options, 'createContext()');
    const powerPreference = enumValue(['default', 'high-performance', 'low-power'], o.powerPreference ?? 'default',
      'createContext(): powerPreference');
    const target = process.env.ESTUARY_WEBNN_TARGET || 'llvm-cpu';
    const bridge = getBridge();
    let hello;
    try {
      hello = (await (bridge.hello ??= bridge.request({ op: 'hello' }))).header;
    } catch (e) {
      throw new DOMException(`the Estuary worker could not start: ${e.message}`, 'NotSupportedError');
    }
    return new MLContext(internal, { bridge, hello, target, powerPreference, accelerated: target !== 'llvm-cpu' });
  }
}

/** Estuary's MLOpSupportLimits with each operand's rankRange added (MLTensorLimits). */
function withRanks(limits) {
  const out = structuredClone(limits);
  for (const k of ['input', 'constant', 'output']) out[k] = { ...out[k], rankRange: { min: 0, max: MAX_RANK } };
  for (const [op, entry] of Object.entries(out)) {
    if (!OPS[op] || typeof entry !== 'object') continue;
    for (const [operand, lim] of Object.entries(entry)) lim.rankRange = rankRange(op, operand);
  }
  return out;
}

// ------------------------------------------------------------------ MLContext

let nextId = 1;

class MLContext {
  constructor(key, init) {
    if (key !== internal) throw new TypeError('Illegal constructor');
    const targetLimits = init.hello.limitsByTarget?.[init.target] ?? init.hello.limits; // what the target compiles
    const limits = withRanks({ preferredInputLayout: 'nchw', maxTensorByteLength: MAX_TENSOR_BYTES, ...targetLimits });
    let resolveLost;
    const lost = new Promise((r) => { resolveLost = r; });
    // the operations Estuary takes dynamic dimensions in (found by the worker: estuary.webnn.dynamic_operations)
    const dynamicOperations = new Set(init.hello.dynamicOperations ?? []);
    this[internal] = { ...init, limits, lost, resolveLost, destroyed: false, tensors: new Set(), graphs: new Set(),
      dynamicOperations };
    this[internal].onLost = (message) => this[internal].destroyed || this._lose(message);
    init.bridge.onLost.push(this[internal].onLost);
  }

  get accelerated() { return this[internal].accelerated; }

  get lost() { return this[internal].lost; }

  opSupportLimits() { return structuredClone(this[internal].limits); }

  _lose(message) {
    const s = this[internal];
    s.destroyed = true;
    const listeners = s.bridge.onLost;
    if (listeners.includes(s.onLost)) listeners.splice(listeners.indexOf(s.onLost), 1);
    for (const t of s.tensors) t[internal].destroyed = true;
    for (const g of s.graphs) g[internal].destroyed = true;
    s.resolveLost({ message });
  }

  _live(where) {
    if (this[internal].destroyed) throw invalidState(`${where}: the MLContext is destroyed or lost`);
  }

  destroy() {
    const s = this[internal];
    if (s.destroyed) return;
    for (const t of [...s.tensors]) t.destroy();
    for (const g of [...s.graphs]) g.destroy();
    this._lose('destroy() was called');
  }

  async createTensor(descriptor) {
    this._live('createTensor()');
    const d = dictionary(descriptor, 'createTensor()');
    const desc = operandDescriptor(d, 'createTensor()');
    supported(this, 'input', desc.dataType, 'createTensor()');
    return this._newTensor(desc, { readable: Boolean(d.readable), writable: Boolean(d.writable), constant: false });
  }

  async createConstantTensor(descriptor, inputData) {
    this._live('createConstantTensor()');
    const desc = operandDescriptor(descriptor, 'createConstantTensor()');
    supported(this, 'constant', desc.dataType, 'createConstantTensor()');
    if (desc.dataType === 'int4' || desc.dataType === 'uint4') {
      throw new DOMException(`createConstantTensor(): ${desc.dataType} tensors are not supported; use builder.constant()`, 'NotSupportedError');
    }
    const bytes = bytesOf(inputData, 'createConstantTensor()');
    if (bytes.byteLength !== byteLength(desc)) {
      throw new TypeError(`createConstantTensor(): the data has ${bytes.byteLength} bytes, the descriptor needs ${byteLength(desc)}`);
    }
    return this._newTensor(desc, { readable: false, writable: false, constant: true }, bytes);
  }

  async _newTensor(desc, usage, bytes) {
    const s = this[internal];
    const tensor = new MLTensor(internal, this, nextId++, desc, usage);
    await s.bridge.request({ op: 'createTensor', tensor: tensor[internal].id, ...desc }, bytes ? [bytes] : []);
    this._live('createTensor()');
    s.tensors.add(tensor);
    return tensor;
  }

  _ownTensor(tensor, where) {
    if (!(tensor instanceof MLTensor)) throw new TypeError(`${where}: expected an MLTensor`);
    if (tensor[internal].context !== this) throw new TypeError(`${where}: the MLTensor belongs to another MLContext`);
    if (tensor[internal].destroyed) throw new TypeError(`${where}: the MLTensor is destroyed`);
    return tensor[internal];
  }

  writeTensor(tensor, inputData) {
    this._live('writeTensor()');
    const t = this._ownTensor(tensor, 'writeTensor()');
    if (!t.usage.writable) throw new TypeError('writeTensor(): the MLTensor was not created writable');
    const bytes = bytesOf(inputData, 'writeTensor()');
    if (bytes.byteLength !== byteLength(t.desc)) {
      throw new TypeError(`writeTensor(): the data has ${bytes.byteLength} bytes, the tensor holds ${byteLength(t.desc)}`);
    }
    this[internal].bridge.send({ op: 'writeTensor', tensor: t.id, ...t.desc }, [bytes]);
  }

  async readTensor(tensor, outputData) {
    this._live('readTensor()');
    const t = this._ownTensor(tensor, 'readTensor()');
    if (!t.usage.readable) throw new TypeError('readTensor(): the MLTensor was not created readable');
    if (outputData !== undefined) {
      if (!(outputData instanceof ArrayBuffer || ArrayBuffer.isView(outputData)
          || (typeof SharedArrayBuffer !== 'undefined' && outputData instanceof SharedArrayBuffer))) {
        throw new TypeError('readTensor(): outputData must be an ArrayBuffer or an ArrayBufferView');
      }
      if (outputData.byteLength !== byteLength(t.desc)) {
        throw new TypeError(`readTensor(): outputData has ${outputData.byteLength} bytes, the tensor holds ${byteLength(t.desc)}`);
      }
    }
    let reply;
    try {
      reply = await this[internal].bridge.request({ op: 'readTensor', tensor: t.id });
    } catch (e) {
      throw new DOMException(`readTensor(): ${e.message}`, 'OperationError');
    }
    if (t.destroyed) throw invalidState('readTensor(): the MLTensor was destroyed');
    const bytes = reply.buffers[0];
    if (outputData === undefined) return bytes.buffer;
    viewOf(outputData).set(bytes);
    return undefined;
  }

  /** The earlier spec's compute(graph, inputs, outputs): array buffer views in and out, kept for
   * programs written against it; runs through temporary tensors and dispatch. Resolves with
   * {inputs, outputs} (the views given, outputs filled). */
  async compute(graph, inputs, outputs) {
    this._live('compute()');
    if (!(graph instanceof MLGraph) || graph[internal].context !== this) {
      throw new TypeError('compute(): expected an MLGraph of this MLContext');
    }
    const g = graph[internal];
    if ([...Object.values(g.dims.inputs), ...Object.values(g.dims.outputs)].some(isDynamic)) {
      throw new TypeError('compute(): the graph has dynamic dimensions, which array buffer views cannot give; use '
        + 'createTensor() and dispatch()');
    }
    const views = (record, want, what) => {
      const r = dictionary(record, `compute(): ${what}`);
      const names = Object.keys(r);
      if (names.length !== Object.keys(want).length || names.some((n) => !(n in want))) {
        throw new TypeError(`compute(): ${what} must be exactly ${JSON.stringify(Object.keys(want))}`);
      }
      for (const n of names) {
        if (!ArrayBuffer.isView(r[n]) || r[n].byteLength !== byteLength(want[n])) {
          throw new TypeError(`compute(): ${what} '${n}' must be an ArrayBufferView of ${byteLength(want[n])} bytes`);
        }
      }
      return r;
    };
    const ins = views(inputs, g.inputs, 'inputs');
    const outs = views(outputs, g.outputs, 'outputs');
    const tensors = [];
    try {
      const inT = {};
      for (const [n, v] of Object.entries(ins)) {
        tensors.push(inT[n] = await this.createTensor({ ...g.inputs[n], writable: true }));
        this.writeTensor(inT[n], v);
      }
      const outT = {};
      for (const n of Object.keys(outs)) tensors.push(outT[n] = await this.createTensor({ ...g.outputs[n], readable: true }));
      this.dispatch(graph, inT, outT);
      for (const [n, v] of Object.entries(outs)) await this.readTensor(outT[n], v);
    } finally {
      for (const t of tensors) t.destroy();
    }
    return { inputs: ins, outputs: outs };
  }

  dispatch(graph, inputs, outputs) {
    this._live('dispatch()');
    if (!(graph instanceof MLGraph)) throw new TypeError('dispatch(): expected an MLGraph');
    const g = graph[internal];
    if (g.context !== this) throw new TypeError('dispatch(): the MLGraph belongs to another MLContext');
    if (g.destroyed) throw invalidState('dispatch(): the MLGraph is destroyed');
    // want: name -> {dataType}; shapes: name -> the dimensions a tensor must have (a Dim: any value;
    // the inputs' dynamic ones are checked together below)
    const named = (record, want, what, shapes) => {
      const r = dictionary(record, `dispatch(): ${what}`);
      const names = Object.keys(r);
      const missing = Object.keys(want).filter((n) => !names.includes(n));
      const extra = names.filter((n) => !(n in want));
      if (missing.length || extra.length) {
        throw new TypeError(`dispatch(): ${what} must be exactly ${JSON.stringify(Object.keys(want))}`
          + `${missing.length ? `; missing ${JSON.stringify(missing)}` : ''}${extra.length ? `; unknown ${JSON.stringify(extra)}` : ''}`);
      }
      const ids = {};
      for (const n of names) {
        const t = this._ownTensor(r[n], `dispatch(): ${what} '${n}'`);
        if (t.usage.constant) throw new TypeError(`dispatch(): ${what} '${n}' is a constant MLTensor`);
        const shape = shapes[n];
        if (t.desc.dataType !== want[n].dataType || t.desc.shape.length !== shape.length
            || t.desc.shape.some((d, i) => !D.isDim(shape[i]) && d !== shape[i])) {
          throw new TypeError(`dispatch(): ${what} '${n}' is ${t.desc.dataType} [${t.desc.shape}], the graph needs `
            + `${want[n].dataType} [${shape}]`);
        }
        ids[n] = t.id;
      }
      return ids;
    };
    const ins = named(inputs, g.inputs, 'input', g.dims.inputs);
    const outs = named(outputs, g.outputs, 'output', outputShapes(g.dims, Object.fromEntries(
      Object.keys(ins).map((n) => [n, inputs[n][internal].desc.shape]))));
    const outIds = Object.values(outs);
    if (new Set(outIds).size !== outIds.length) throw new TypeError('dispatch(): an MLTensor is given for two outputs');
    if (Object.values(ins).some((id) => outIds.includes(id))) {
      throw new TypeError('dispatch(): an MLTensor is both an input and an output');
    }
    const feeds = Object.fromEntries(Object.entries(ins).map(([n, id]) => [g.inputNames[n], id]));
    this[internal].bridge.send({ op: 'dispatch', graph: g.id, inputs: feeds, outputs: outs });
  }
}

/** The outputs' concrete shapes for inputs of concrete `shapes` (name -> numbers), given the graph's
 * dimensions (`dims`: {inputs, outputs: name -> dimensions, unifier}); a TypeError when a dynamic
 * dimension is outside 1..maxSize, two inputs give one name different values, or a binding or
 * check the shape rules recorded fails (what Estuary's runtime would refuse). */
function outputShapes(dims, shapes) {
  const env = new Map();
  const source = new Map();
  for (const [name, want] of Object.entries(dims.inputs)) {
    want.forEach((d, axis) => {
      if (!D.isDim(d)) return;
      const { sym } = d;
      const got = shapes[name][axis];
      const where = `dispatch(): input '${name}' dimension ${axis} (${sym.name}) is ${got}`;
      if (got < sym.lo || got > sym.hi) throw new TypeError(`${where}, outside its bounds ${sym.lo}..${sym.hi}`);
      if (env.has(sym.name) && env.get(sym.name) !== got) {
        throw new TypeError(`${where}, but ${source.get(sym.name)} gave ${sym.name} = ${env.get(sym.name)}`);
      }
      env.set(sym.name, got);
      if (!source.has(sym.name)) source.set(sym.name, `input '${name}' dimension ${axis}`);
    });
  }
  const broken = dims.unifier.violation(env);
  if (broken) throw new TypeError(`dispatch(): ${broken}`);
  return Object.fromEntries(Object.entries(dims.outputs).map(([n, shape]) => [n, shape.map((d) => D.evaluate(d, env))]));
}

// ------------------------------------------------------------------ MLTensor, MLGraph, MLOperand

class MLTensor {
  constructor(key, context, id, desc, usage) {
    if (key !== internal) throw new TypeError('Illegal constructor');
    this[internal] = { context, id, desc, usage, destroyed: false, shape: Object.freeze([...desc.shape]) };
  }

  get dataType() { return this[internal].desc.dataType; }

  get shape() { return this[internal].shape; }

  get readable() { return this[internal].usage.readable; }

  get writable() { return this[internal].usage.writable; }

  get constant() { return this[internal].usage.constant; }

  destroy() {
    const t = this[internal];
    if (t.destroyed) return;
    t.destroyed = true;
    const c = t.context[internal];
    c.tensors.delete(this);
    if (!c.bridge.dead) c.bridge.send({ op: 'destroyTensor', tensor: t.id });
  }
}

class MLGraph {
  constructor(key, state) {
    if (key !== internal) throw new TypeError('Illegal constructor');
    this[internal] = state;
  }

  destroy() {
    const g = this[internal];
    if (g.destroyed) return;
    g.destroyed = true;
    const c = g.context[internal];
    c.graphs.delete(this);
    if (!c.bridge.dead) c.bridge.send({ op: 'destroyGraph', graph: g.id });
  }
}

class MLOperand {
  /** desc: {dataType, shape} with dynamic dimensions as Dims; `shape` reports them as
   * MLDynamicDimensions {name, maxSize} (a derived one named by its expression, `2*seq`). */
  constructor(key, builder, desc, producer) {
    if (key !== internal) throw new TypeError('Illegal constructor');
    this[internal] = { builder, desc, producer, shape: Object.freeze(desc.shape.map(D.toMLDimension)) };
  }

  get dataType() { return this[internal].desc.dataType; }

  get shape() { return this[internal].shape; }
}

// ------------------------------------------------------------------ MLGraphBuilder

const ERROR_NAMES = { UnsupportedOpError: 'NotSupportedError' };

class MLGraphBuilder {
  constructor(context) {
    if (!(context instanceof MLContext)) throw new TypeError('MLGraphBuilder(): expected an MLContext');
    context._live('MLGraphBuilder()');
    // symbols: the dynamic dimensions the inputs declare (name -> Sym); unifier: what the shape
    // rules learned about them (bindings, run-time checks), as Estuary's graph builder records it
    this[internal] = { context, inputs: [], constants: [], operators: [], built: false, symbols: new Map(),
      unifier: new D.Unifier() };
  }

  _live(where) {
    const b = this[internal];
    b.context._live(where);
    if (b.built) throw invalidState(`${where}: this MLGraphBuilder has already built its graph`);
  }

  _own(v, where) {
    if (!(v instanceof MLOperand)) throw new TypeError(`${where}: expected an MLOperand`);
    if (v[internal].builder !== this) throw new TypeError(`${where}: the MLOperand belongs to another MLGraphBuilder`);
    return v;
  }

  input(name, descriptor) {
    this._live('input()');
    if (typeof name !== 'string' || name === '') throw new TypeError('input(): the name must be a non-empty string');
    const desc = operandDescriptor(descriptor, `input('${name}')`, this[internal].symbols);
    supported(this[internal].context, 'input', desc.dataType, `input('${name}')`);
    for (const d of desc.shape) if (D.isDim(d)) this[internal].symbols.set(d.sym.name, d.sym);
    const operand = new MLOperand(internal, this, desc, null);
    operand[internal].input = name;
    // a name may be given twice here (browsers allow it); build() refuses a graph that uses both
    this[internal].inputs.push([name, operand]);
    return operand;
  }

  /** constant(descriptor, buffer), constant(type, value) or constant(tensor). */
  constant(a, b) {
    this._live('constant()');
    let desc;
    let data;
    if (a instanceof MLTensor) {
      const t = this[internal].context._ownTensor(a, 'constant()');
      if (!t.usage.constant) throw new TypeError('constant(): the MLTensor was not created by createConstantTensor()');
      desc = t.desc;
      data = { tensor: t.id };
    } else if (typeof a === 'string') {
      const type = enumValue(DATA_TYPES, a, 'constant(): type');
      desc = { dataType: type, shape: [] };
      data = scalarBytes(type, convert('MLNumber', b, 'constant(): value'));
    } else {
      desc = operandDescriptor(a, 'constant()');
      data = bytesOf(b, 'constant()');
      if (data.byteLength !== byteLength(desc)) {
        throw new TypeError(`constant(): the buffer has ${data.byteLength} bytes, the descriptor needs ${byteLength(desc)}`);
      }
      if (desc.dataType === 'int4' || desc.dataType === 'uint4') data = unpack4(data, size(desc.shape), desc.dataType === 'int4');
    }
    supported(this[internal].context, 'constant', desc.dataType, 'constant()');
    const operand = new MLOperand(internal, this, desc, null);
    operand[internal].constant = data;
    this[internal].constants.push(operand);
    return operand;
  }

  _call(spec, args) {
    const where0 = `${spec.name}()`;
    this._live(where0);
    const optionsArg = args[spec.params.length];
    const rawOptions = dictionary(optionsArg, `${where0}: options`);
    const label = rawOptions.label === undefined ? '' : String(rawOptions.label);
    const where = label ? `${spec.name}() [${label}]` : where0; // browsers quote labels in brackets
    const { unifier } = this[internal];
    const converted = {};
    const recorded = [];
    const operandsUsed = [];
    spec.params.forEach(([p, type], i) => {
      const v = args[i];
      if (v === undefined) fail(where, `missing argument '${p}'`);
      let c;
      if (type === 'MLOperand') {
        c = this._own(v, `${where}: ${p}`);
        operandsUsed.push([p, c]);
      } else if (type === 'sequence<MLOperand>') {
        c = Array.from(toList(v, `${where}: ${p}`), (x, j) => this._own(x, `${where}: ${p}[${j}]`));
        c.forEach((x) => operandsUsed.push([p, x]));
      } else if (type === 'sequence<MLDimension>') { // the JSON form records {name} / {expression}; the rules see resolved values
        c = convert(type, v, `${where}: ${p}`, this[internal].symbols);
        recorded.push([p, c.map(dimensionJSON)]);
        converted[p] = c.map((d) => unifier.resolve(d));
        return;
      } else {
        c = convert(type, v, `${where}: ${p}`);
      }
      converted[p] = c;
      recorded.push([p, c]);
    });
    const options = {};
    for (const [k, { type }] of Object.entries(spec.options)) {
      const v = rawOptions[k];
      if (v === undefined) continue;
      if (type === 'MLOperand') {
        options[k] = this._own(v, `${where}: options.${k}`);
        operandsUsed.push([k, options[k]]);
      } else {
        options[k] = convert(type, v, `${where}: options.${k}`);
      }
    }
    converted.options = options;
    for (const [p, o] of operandsUsed) {
      const { min, max } = rankRange(spec.name, p);
      if (o.shape.length < min || o.shape.length > max) {
        fail(where, `${p} has rank ${o.shape.length}; ${spec.name} takes rank ${min === max ? min : `${min} to ${max}`}`);
      }
    }
    const limits = this[internal].context[internal].limits[spec.name];
    if (limits) {
      for (const [p, o] of operandsUsed) {
        const allowed = limits[p]?.dataTypes;
        if (allowed && !allowed.includes(o.dataType)) fail(where, `${p} of type ${o.dataType} is not supported (${allowed.join(', ')})`);
      }
    }
    const dynamicOperand = operandsUsed.find(([, o]) => isDynamic(o[internal].desc.shape));
    if (dynamicOperand && !this[internal].context[internal].dynamicOperations.has(spec.name)) {
      const [p, o] = dynamicOperand;
      const syms = new Map();
      o[internal].desc.shape.forEach((d) => D.symbols(d, syms));
      fail(where, `${spec.name} does not take dynamic dimensions: ${p} has the shape [${o[internal].desc.shape}] `
        + `(${D.boundsText(syms)}); give it fixed dimensions`);
    }
    // operands' dimensions through what the graph learned (a symbol bound to another reads as it)
    const plain = (x) => ({ dataType: x.dataType, shape: x[internal].desc.shape.map((d) => unifier.resolve(d)) });
    const view = Object.fromEntries(Object.entries(converted).map(([k, v]) => [k, v instanceof MLOperand ? plain(v)
      : Array.isArray(v) && v[0] instanceof MLOperand ? v.map(plain) : v]));
    view.options = {}; // the options given, and the dictionary's defaults for the others
    for (const [k, { default: d }] of Object.entries(spec.options)) {
      if (k in options) view.options[k] = options[k] instanceof MLOperand ? plain(options[k]) : options[k];
      else if (d !== undefined) view.options[k] = d;
    }
    const result = D.unifying(unifier, () => spec.infer(where, view));
    const multi = Array.isArray(result);
    const descs = (multi ? result : [result]).map((d) => ({ ...d, shape: d.shape.map((x) => unifier.resolve(x)) }));
    for (const d of descs) {
      d.shape.forEach((x) => {
        if (!unifier.needPositive(x)) fail(where, `the output [${d.shape}] has the dimension ${x}, never positive (${D.boundsText(D.symbols(x))})`);
      });
      if (leastBytes(d) > MAX_TENSOR_BYTES) fail(where, `the output [${d.shape}] is too large`);
      if (d.shape.length > MAX_RANK) fail(where, `the output [${d.shape}] has rank ${d.shape.length}, more than ${MAX_RANK}`);
      supported(this[internal].context, 'output', d.dataType, where);
    }
    if (Object.keys(options).length || optionsArg !== undefined) recorded.push(['options', options]);
    const record = { index: this[internal].operators.length, name: spec.name, args: recorded, multi, results: [] };
    record.results = descs.map((d) => new MLOperand(internal, this, d, record));
    this[internal].operators.push(record);
    return multi ? [...record.results] : record.results[0];
  }

  async build(outputs) {
    const b = this[internal];
    b.context._live('build()');
    if (b.built) throw invalidState('build(): this MLGraphBuilder has already built its graph');
    const named = dictionary(outputs, 'build(): outputs');
    const entries = Object.entries(named);
    if (entries.length === 0) throw new TypeError('build(): outputs must name at least one MLOperand');
    for (const [name, o] of entries) {
      if (name === '') throw new TypeError('build(): output names must be non-empty');
      this._own(o, `build(): output '${name}'`);
      if (!o[internal].producer) throw new TypeError(`build(): output '${name}' is an input or a constant, not an operation's result`);
    }
    const { doc, buffers, inputs, inputNames, inputDims } = this._document(entries);
    b.built = true;
    const context = b.context;
    const c = context[internal];
    const id = nextId++;
    let reply;
    try {
      reply = await c.bridge.request({ op: 'build', graph_id: id, graph: doc, target: c.target,
        device: c.target === 'vulkan-spirv' ? 'vulkan' : null }, buffers);
    } catch (e) {
      const name = ERROR_NAMES[e.estuaryName]
        ?? (/unsupported WebNN operation/.test(e.message) ? 'NotSupportedError' : 'OperationError');
      throw new DOMException(`build(): ${e.message}`, name);
    }
    context._live('build()');
    const outDescs = Object.fromEntries(entries.map(([n, o]) => [n, { dataType: o.dataType, shape: [...o.shape] }]));
    // the dimensions dispatch() checks tensors against (dynamic ones as Dims, with the builder's Unifier)
    const dims = { inputs: inputDims, outputs: Object.fromEntries(entries.map(([n, o]) => [n, o[internal].desc.shape])),
      unifier: b.unifier };
    const graph = new MLGraph(internal, { context, id, inputs, inputNames, outputs: outDescs, dims, destroyed: false,
      compiled: reply.header.outputs });
    c.graphs.add(graph);
    return graph;
  }

  /** The graph as Estuary's WebNN JSON document: the operators the outputs need, in order. */
  _document(entries) {
    const b = this[internal];
    const used = new Set();
    const stack = entries.map(([, o]) => o);
    while (stack.length) {
      const o = stack.pop();
      if (used.has(o)) continue;
      used.add(o);
      const p = o[internal].producer;
      if (p) for (const [, v] of p.args) stack.push(...operandsIn(v));
    }
    const names = new Map();
    const taken = new Set(entries.map(([n]) => n));
    const inputs = {};
    const inputNames = {}; // input name -> its name in the document (the JSON form has one name space)
    const inputDims = {}; // input name -> its dimensions (Dims for the dynamic ones)
    const doc = { inputs: {}, operators: [], outputs: entries.map(([n]) => n) };
    const fresh = (base) => {
      let n = base;
      while (taken.has(n)) n += '_';
      taken.add(n);
      return n;
    };
    for (const [name, o] of b.inputs) {
      if (used.has(o) && name in inputs) throw new TypeError(`build(): two inputs of the graph are named '${name}'`);
      if (used.has(o)) {
        inputs[name] = { dataType: o.dataType, shape: [...o.shape] };
        inputDims[name] = o[internal].desc.shape;
      }
    }
    for (const [name, o] of b.inputs) {
      if (!used.has(o)) continue;
      const inDoc = taken.has(name) ? fresh(`${name}_input`) : fresh(name);
      inputNames[name] = inDoc;
      names.set(o, inDoc);
      doc.inputs[inDoc] = { descriptor: inputs[name] };
    }
    for (const [name, o] of entries) if (!names.has(o)) names.set(o, name);
    const buffers = [];
    b.constants.forEach((o, i) => {
      if (!used.has(o)) return;
      const n = fresh(`constant_${i}`);
      names.set(o, n);
      const data = o[internal].constant;
      let ref = data;
      if (data instanceof Uint8Array) {
        ref = { buffer: buffers.length };
        buffers.push(data);
      }
      doc.inputs[n] = { descriptor: { dataType: o.dataType, shape: [...o.shape] }, data: ref, constant: true };
    });
    const refs = (v) => (v instanceof MLOperand ? names.get(v) : Array.isArray(v) ? v.map(refs)
      : v && typeof v === 'object' && typeof v !== 'bigint' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, refs(x)])) : v);
    for (const rec of b.operators) {
      if (!rec.results.some((r) => used.has(r))) continue;
      rec.results.forEach((r, k) => {
        if (!names.has(r)) names.set(r, fresh(`${rec.name}_${rec.index}${rec.multi ? `_${k}` : ''}`));
      });
      const outs = rec.results.map((r) => names.get(r));
      doc.operators.push({ name: rec.name, arguments: rec.args.map(([p, v]) => ({ [p]: refs(v) })),
        outputs: rec.multi ? outs : outs[0] });
    }
    for (const [name, o] of entries) { // an operand named twice: the other names through identity
      if (names.get(o) !== name) doc.operators.push({ name: 'identity', arguments: [{ input: names.get(o) }], outputs: name });
    }
    return { doc, buffers, inputs, inputNames, inputDims };
  }
}

function toList(v, where) {
  if (v === null || typeof v !== 'object' || typeof v[Symbol.iterator] !== 'function') throw new TypeError(`${where}: expected a sequence`);
  return v;
}

function operandsIn(v) {
  if (v instanceof MLOperand) return [v];
  if (Array.isArray(v)) return v.flatMap(operandsIn);
  if (v && typeof v === 'object') return Object.values(v).flatMap(operandsIn);
  return [];
}

/** 4-bit values packed two to a byte (the first in the low nibble), one per byte as Estuary stores
 * them: int4 sign-extended to int8, uint4 as uint8. */
function unpack4(packed, count, signed) {
  const out = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    const nibble = (packed[i >> 1] >> ((i & 1) * 4)) & 0xf;
    out[i] = signed && nibble >= 8 ? nibble + 0xf0 : nibble;
  }
  return out;
}

/** The bytes of one number cast to `type` (the spec's "cast a number"). */
function scalarBytes(type, value) {
  if (type === 'int4' || type === 'uint4') throw new TypeError(`constant(): ${type} scalars are not supported`);
  const Typed = TYPED[type];
  const array = new Typed(1);
  if (type === 'int64' || type === 'uint64') {
    const [lo, hi] = type === 'int64' ? [-(2n ** 63n), 2n ** 63n - 1n] : [0n, 2n ** 64n - 1n];
    let x = typeof value === 'bigint' ? value : BigInt(Number.isNaN(value) ? 0 : Math.round(Math.min(Math.max(value, -1e300), 1e300)));
    x = x < lo ? lo : x > hi ? hi : x;
    array[0] = x;
  } else if (type === 'float16') {
    array[0] = float16Bits(Number(value));
  } else if (type === 'float32') {
    array[0] = Number(value);
  } else {
    const bits = { int32: 32, uint32: 32, int8: 8, uint8: 8 }[type];
    const signed = type.startsWith('int');
    const lo = signed ? -(2 ** (bits - 1)) : 0;
    const hi = signed ? 2 ** (bits - 1) - 1 : 2 ** bits - 1;
    const x = Number(value);
    array[0] = Number.isNaN(x) ? 0 : roundHalfEven(Math.min(Math.max(x, lo), hi));
  }
  return new Uint8Array(array.buffer);
}

function roundHalfEven(x) {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** IEEE half-precision bits of x, rounding to nearest even. */
function float16Bits(x) {
  const f32 = new Float32Array([x]);
  const u = new Uint32Array(f32.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1))) h++;
  return sign | h;
}

for (const [name, spec] of Object.entries(OPS)) {
  Object.defineProperty(MLGraphBuilder.prototype, name, {
    value: { [name](...args) { return this._call(spec, args); } }[name],
    writable: true, configurable: true, enumerable: false,
  });
}

module.exports = { ML, MLContext, MLGraphBuilder, MLOperand, MLGraph, MLTensor, Failure };
