'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { discounted } = require('../discount.js');

test('no discount', () => {
  assert.strictEqual(discounted(80, 0), 80);
});

test('a quarter off', () => {
  assert.strictEqual(discounted(80, 25), 60);
});
