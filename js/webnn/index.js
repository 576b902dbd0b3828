'use strict';
// WebNN for Node, run by Estuary: `const { ml } = require('@estuary/webnn')` (or
// `node --require ./register.js program.js` for a global navigator.ml, as in a browser).
const api = require('./lib/api');

const ml = new api.ML();

module.exports = {
  ml,
  ML: api.ML,
  MLContext: api.MLContext,
  MLGraphBuilder: api.MLGraphBuilder,
  MLOperand: api.MLOperand,
  MLGraph: api.MLGraph,
  MLTensor: api.MLTensor,
};
