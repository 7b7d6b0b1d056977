'use strict';

// The largest number of a non-empty array.
function maxOf(xs) {
  let best = xs[0];
  for (const x of xs) {
    if (x > best) {
      best = x;
    }
  }
  return best;
}

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

module.exports = { maxOf, minOf };
