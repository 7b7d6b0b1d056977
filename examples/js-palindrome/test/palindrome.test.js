'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { isPalindrome, reverse } = require('../palindrome.js');

test('reverse', () => {
  assert.strictEqual(reverse('abc'), 'cba');
});

test('racecar', () => {
  assert.strictEqual(isPalindrome('racecar'), true);
});

test('not one', () => {
  assert.strictEqual(isPalindrome('abc'), false);
});
