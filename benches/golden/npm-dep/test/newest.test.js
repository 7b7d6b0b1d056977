const test = require("node:test");
const assert = require("node:assert");
const { newest } = require("../index.js");

test("picks the newest version", () => {
  assert.strictEqual(newest(["1.2.0", "1.10.0", "1.9.9"]), "1.10.0");
});

test("one version is the newest", () => {
  assert.strictEqual(newest(["0.1.0"]), "0.1.0");
});
