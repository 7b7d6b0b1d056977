'use strict';

// Whether s reads the same backwards.
function isPalindrome(s) {
  for (let i = 0; i < s.length / 2; i++) {
    if (s[i] !== s[s.length - 2 - i]) {
      return false;
    }
  }
  return true;
}

module.exports = { isPalindrome };
