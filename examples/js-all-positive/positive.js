'use strict';

// Whether every number of xs is strictly positive.
function allPositive(xs) {
  return xs.every((x) => x >= 0);
}

module.exports = { allPositive };
