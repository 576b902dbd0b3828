'use strict';
// Runs a WebNN JSON graph (Estuary's / the web-platform-tests layout, constants inline or in a side
// file) through the JS API, building it call by call the way a browser program would, and times
// build() and write + dispatch + read per call. Prints JSON; replay.py times the same file through
// the Python API.  Usage: node js/webnn/bench/replay.js model.json [iterations]
const fs = require('node:fs');
const path = require('node:path');
require('../register');
const { OPS } = require('../lib/ops');

const TYPED = { float32: Float32Array, float16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array,
  uint64: BigUint64Array, int8: Int8Array, uint8: Uint8Array };
const now = () => Number(process.hrtime.bigint()) / 1e6;

const files = new Map(); // side files, read once

function constantData(entry, folder) {
  const { dataType, shape } = entry.descriptor;
  const count = shape.reduce((a, b) => a * b, 1);
  const Typed = TYPED[dataType];
  if (Array.isArray(entry.data)) return Typed.from(entry.data, (v) => (Typed === BigInt64Array || Typed === BigUint64Array ? BigInt(v) : v));
  const where = path.join(folder, entry.data.file);
  if (!files.has(where)) files.set(where, fs.readFileSync(where));
  const file = files.get(where);
  const start = file.byteOffset + (entry.data.byteOffset || 0);
  return new Uint8Array(file.buffer.slice(start, start + count * Typed.BYTES_PER_ELEMENT));
}

function buildGraph(builder, doc, folder) {
  const operands = {};
  const inputs = {};
  for (const [name, entry] of Object.entries(doc.inputs)) {
    const desc = { dataType: entry.descriptor.dataType, shape: entry.descriptor.shape };
    if (entry.constant) operands[name] = builder.constant(desc, constantData(entry, folder));
    else inputs[name] = desc, operands[name] = builder.input(name, desc);
  }
  for (const op of doc.operators) {
    const spec = OPS[op.name];
    const types = Object.fromEntries(spec.params);
    const ref = (v) => (Array.isArray(v) ? v.map(ref) : operands[v]);
    const args = op.arguments.map((a) => {
      const [[p, v]] = Object.entries(a);
      if (p === 'options') {
        return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, spec.options[k]?.type === 'MLOperand' ? ref(x) : x]));
      }
      return types[p] === 'MLOperand' || types[p] === 'sequence<MLOperand>' ? ref(v) : v;
    });
    const result = builder[op.name](...args);
    const outs = Array.isArray(op.outputs) ? op.outputs : [op.outputs];
    (Array.isArray(result) ? result : [result]).forEach((r, i) => { operands[outs[i]] = r; });
  }
  const names = doc.outputs ?? Object.keys(doc.expectedOutputs);
  return { inputs, outputs: Object.fromEntries(names.map((n) => [n, operands[n]])) };
}

(async () => {
  const file = path.resolve(process.argv[2]);
  const n = Number(process.argv[3] || 50);
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  const context = await navigator.ml.createContext();
  let t = now();
  const builder = new MLGraphBuilder(context);
  const { inputs, outputs } = buildGraph(builder, doc, path.dirname(file));
  const record = now() - t;
  t = now();
  const graph = await builder.build(outputs);
  const build = now() - t;
  const inT = {};
  const data = {};
  for (const [name, desc] of Object.entries(inputs)) {
    inT[name] = await context.createTensor({ ...desc, writable: true });
    data[name] = new TYPED[desc.dataType](desc.shape.reduce((a, b) => a * b, 1)).map((_, i) => Math.sin(i));
  }
  const outT = {};
  const outBufs = {};
  for (const [name, o] of Object.entries(outputs)) {
    outT[name] = await context.createTensor({ dataType: o.dataType, shape: o.shape, readable: true });
    outBufs[name] = new TYPED[o.dataType](o.shape.reduce((a, b) => a * b, 1));
  }
  const once = async () => {
    for (const name of Object.keys(inT)) context.writeTensor(inT[name], data[name]);
    context.dispatch(graph, inT, outT);
    for (const name of Object.keys(outT)) await context.readTensor(outT[name], outBufs[name]);
  };
  for (let i = 0; i < Math.min(5, n); i++) await once();
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await once();
    times.push(now() - t0);
  }
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ model: path.basename(file), record_ms: record, build_ms: build, median_ms: times[n >> 1],
    p90_ms: times[Math.floor(n * 0.9)], iterations: n }));
  context.destroy();
})();
