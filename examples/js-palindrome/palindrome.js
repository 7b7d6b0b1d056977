'use strict';

// s backwards.
function reverse(s) {
  let out = '';
  for (let i = s.length - 1; i >= 0; i--) {
    out += s[i];
  }
  return out;
}

// Whether s reads the same backwards.
function isPalindrome(s) {
  for (let i = 0; i < s.length / 2; i++) {
    if (s[i] !== s[s.length - 2 - i]) {
      return false;
    }
  }
  return true;
}

module.exports = { isPalindrome, reverse };
