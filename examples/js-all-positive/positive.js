'use strict';

// Whether some number of xs is negative.
function anyNegative(xs) {
  return xs.some((x) => x < 0);
}

// Whether every number of xs is strictly positive.
function allPositive(xs) {
  return xs.every((x) => x >= 0);
}

module.exports = { allPositive, anyNegative };
