'use strict';

// The sum of the squares of xs.
function sumOfSquares(xs) {
  let total = 0;
  for (const x of xs) {
    total += x * x;
  }
  return total;
}

// The sum of 1 + 2 + ... + n.
function sumTo(n) {
  let total = 0;
  for (let i = 1; i < n; i++) {
    total += i;
  }
  return total;
}

module.exports = { sumOfSquares, sumTo };
