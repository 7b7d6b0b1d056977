'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { sumTo } = require('../sum.js');

test('zero', () => {
  assert.strictEqual(sumTo(0), 0);
});

test('ten', () => {
  assert.strictEqual(sumTo(10), 55);
});
