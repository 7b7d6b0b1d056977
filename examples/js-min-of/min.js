'use strict';

// The smallest number of a non-empty array.
function minOf(xs) {
  let best = xs[0];
  for (const x of xs) {
    if (x > best) {
      best = x;
    }
  }
  return best;
}

module.exports = { minOf };
