'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { isPalindrome } = require('../palindrome.js');

test('racecar', () => {
  assert.strictEqual(isPalindrome('racecar'), true);
});

test('not one', () => {
  assert.strictEqual(isPalindrome('abc'), false);
});
