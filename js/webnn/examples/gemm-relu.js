// A WebNN program as a browser runs it, nothing Estuary-specific: y = relu(x W + b).
// Under Node: node --require <repo>/js/webnn/register.js gemm-relu.js
async function main() {
  const context = await navigator.ml.createContext({ powerPreference: 'default' });
  const builder = new MLGraphBuilder(context);
  const x = builder.input('x', { dataType: 'float32', shape: [2, 3] });
  const w = builder.constant({ dataType: 'float32', shape: [3, 2] }, new Float32Array([1, -1, 2, 0, -3, 1]));
  const b = builder.constant({ dataType: 'float32', shape: [2] }, new Float32Array([0.5, -0.5]));
  const graph = await builder.build({ y: builder.relu(builder.gemm(x, w, { c: b })) });
  const input = await context.createTensor({ dataType: 'float32', shape: [2, 3], writable: true });
  const output = await context.createTensor({ dataType: 'float32', shape: [2, 2], readable: true });
  context.writeTensor(input, new Float32Array([1, 2, 3, -1, 0, 1]));
  context.dispatch(graph, { x: input }, { y: output });
  const y = new Float32Array(await context.readTensor(output));
  console.log(JSON.stringify(Array.from(y)));
}

main().catch((e) => { console.error(`${e.name}: ${e.message}`); process.exitCode = 1; });
