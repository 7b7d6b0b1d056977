const _ = require("lodash");
const semver = require("semver");

/** The newest of some version strings. */
function newest(versions) {
  return _.last(versions.slice().sort(semver.compare));
}

module.exports = { newest };
