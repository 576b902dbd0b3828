'use strict';
// Installs WebNN globally, as a browser provides it: navigator.ml and the interface objects
// (MLGraphBuilder, MLContext, ...). Use with `node --require <this file> program.js`.
const webnn = require('./index');

if (typeof globalThis.navigator === 'undefined') {
  Object.defineProperty(globalThis, 'navigator', { value: {}, writable: true, configurable: true });
}
Object.defineProperty(globalThis.navigator, 'ml', { value: webnn.ml, writable: false, configurable: true, enumerable: true });
for (const name of ['ML', 'MLContext', 'MLGraphBuilder', 'MLOperand', 'MLGraph', 'MLTensor']) {
  Object.defineProperty(globalThis, name, { value: webnn[name], writable: true, configurable: true, enumerable: false });
}

module.exports = webnn;
