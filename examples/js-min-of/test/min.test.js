'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { maxOf, minOf } = require('../min.js');

test('max', () => {
  assert.strictEqual(maxOf([4, 2, 9]), 9);
});

test('one element', () => {
  assert.strictEqual(minOf([4]), 4);
});

test('several', () => {
  assert.strictEqual(minOf([4, 2, 9]), 2);
});
