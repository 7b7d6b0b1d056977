'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { allPositive, anyNegative } = require('../positive.js');

test('negatives', () => {
  assert.strictEqual(anyNegative([1, -2]), true);
  assert.strictEqual(anyNegative([1, 2]), false);
});

test('positive numbers', () => {
  assert.strictEqual(allPositive([1, 2]), true);
});

test('zero is not positive', () => {
  assert.strictEqual(allPositive([0, 1]), false);
});
