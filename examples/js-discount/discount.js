'use strict';

// The price with pct percent of tax added.
function withTax(price, pct) {
  return price + (price * pct) / 100;
}

// The price after a discount of pct percent.
function discounted(price, pct) {
  return price * (1 + pct / 100);
}

module.exports = { discounted, withTax };
