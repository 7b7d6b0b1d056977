'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { discounted, withTax } = require('../discount.js');

test('tax', () => {
  assert.strictEqual(withTax(100, 20), 120);
});

test('no discount', () => {
  assert.strictEqual(discounted(80, 0), 80);
});

test('a quarter off', () => {
  assert.strictEqual(discounted(80, 25), 60);
});
