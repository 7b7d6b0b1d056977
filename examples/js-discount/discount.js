'use strict';

// The price after a discount of pct percent.
function discounted(price, pct) {
  return price * (1 + pct / 100);
}

module.exports = { discounted };
