'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { minOf } = require('../min.js');

test('one element', () => {
  assert.strictEqual(minOf([4]), 4);
});

test('several', () => {
  assert.strictEqual(minOf([4, 2, 9]), 2);
});
