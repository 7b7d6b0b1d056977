'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { sumOfSquares, sumTo } = require('../sum.js');

test('squares', () => {
  assert.strictEqual(sumOfSquares([1, 2, 3]), 14);
});

test('zero', () => {
  assert.strictEqual(sumTo(0), 0);
});

test('ten', () => {
  assert.strictEqual(sumTo(10), 55);
});
