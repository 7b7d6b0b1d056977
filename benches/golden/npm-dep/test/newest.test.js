const assert = require("node:assert");
const { newest } = require("../index.js");

describe("newest", () => {
  it("picks the newest version", () => {
    assert.strictEqual(newest(["1.2.0", "1.10.0", "1.9.9"]), "1.10.0");
  });

  it("takes one version as the newest", () => {
    assert.strictEqual(newest(["0.1.0"]), "0.1.0");
  });
});
