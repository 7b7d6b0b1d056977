'use strict';
// forq's evidence helper for JavaScript: runs the examples in the comment
// above each changed function (`>>> f(x)` with the answer on the next
// line, and `f(x) == y` / `=>` / `->` lines) and calls it on inputs near
// theirs. Usage: node examples.cjs ROOT BUDGET_S NEAR (FILE:LINE |
// FILE::NAME)...; the
// nonce comes on stdin, and the report (one JSON line behind it) goes to
// stdout through functions taken before any examined code runs.
const fs = require('fs');
const path = require('path');
const vm = require('vm');
const { createRequire } = require('module');

const writeSync = fs.writeSync;
const exit = process.exit.bind(process);
const stringify = JSON.stringify;
const NONCE = fs.readFileSync(0, 'utf8').split('\n')[0].trim();
const [root, budgetS, nearCount, ...targets] = process.argv.slice(2);
const BUDGET = Math.max(1, Math.round(Number(budgetS) * 1000));

const DECL = [
  /^\s*(?:export\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\(/,
  /^\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)/,
  /^\s*(?:exports|module\.exports)\.([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?(?:function\b|\()/,
];

// The function named `name`, or else the one whose declaration is the
// last at or above `line` (1-based), and the comment right above it.
function functionAt(lines, line, name) {
  const from = name ? lines.length : Math.min(line, lines.length);
  for (let i = from - 1; i >= 0; i--) {
    for (const re of DECL) {
      const m = lines[i].match(re);
      if (m && (!name || m[1] === name)) return { name: m[1], doc: commentAbove(lines, i) };
    }
  }
  return null;
}

function commentAbove(lines, i) {
  let j = i - 1;
  while (j >= 0 && lines[j].trim() === '') j--;
  if (j < 0) return '';
  if (lines[j].trim().endsWith('*/')) {
    let k = j;
    while (k >= 0 && !lines[k].includes('/*')) k--;
    return k < 0 ? '' : lines.slice(k, j + 1).join('\n');
  }
  let k = j;
  while (k >= 0 && lines[k].trim().startsWith('//')) k--;
  return lines.slice(k + 1, j + 1).map((l) => l.replace(/^\s*\/\/\s?/, '')).join('\n');
}

// Python-flavoured answers as JavaScript: `(a, b)` is a list, True/False/None.
function jsOf(text) {
  let t = text.trim().replace(/\bTrue\b/g, 'true').replace(/\bFalse\b/g, 'false').replace(/\bNone\b/g, 'null');
  if (t.startsWith('(') && t.endsWith(')') && t.includes(',')) t = '[' + t.slice(1, -1) + ']';
  return t;
}

const ARROW = /^\s*(?:>>>\s*)?(.*?\))\s*(?:==>|===|==|=>|->|\u279e|returns|should return)\s*(.+?)\s*;?\s*$/;

// [call text, answer text] of each example of `name` in `doc`.
function examples(doc, name) {
  const out = [];
  const lines = doc.split('\n').map((l) => l.replace(/^\s*(?:\/\*+|\*)?\s?/, '').replace(/\*\/\s*$/, ''));
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i].trim();
    const m = l.match(/^>>>\s*(.+)$/);
    if (m && m[1].includes(name + '(')) {
      const next = (lines[i + 1] || '').trim();
      if (next && !next.startsWith('>>>')) out.push([m[1], next]);
      continue;
    }
    const a = l.match(ARROW);
    if (a && a[1].trim().startsWith(name + '(')) out.push([a[1].trim(), a[2].split(' //')[0].replace(/\.$/, '')]);
  }
  return out;
}

function argsOf(call, name) {
  const at = call.indexOf(name + '(');
  if (at < 0) return null;
  let depth = 0, quote = null;
  for (let i = at + name.length; i < call.length; i++) {
    const c = call[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      depth--;
      if (depth === 0) return call.slice(at + name.length + 1, i);
    }
  }
  return null;
}

const SKIP = new Set(['node_modules', 'dist', 'build', 'coverage']);

// The repository's test files (`*.test.js`, `*.spec.js`, and scripts under
// `test/`, `tests/`, `__tests__/`), in a stable order.
function testFiles(limit = 400) {
  const out = [];
  const walk = (dir, inTests) => {
    let entries;
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
    } catch (e) {
      return;
    }
    for (const e of entries) {
      if (out.length >= limit || e.name.startsWith('.') || SKIP.has(e.name)) continue;
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full, inTests || ['test', 'tests', '__tests__'].includes(e.name));
      else if (/\.[cm]?js$/.test(e.name) && (inTests || /[.-](test|spec)\.[cm]?js$/.test(e.name))) out.push(full);
    }
  };
  walk(root, false);
  return out;
}

const TEST_NAME = /\b(?:test|it)\s*\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/g;

// The calls of `name` (or of a name bound to it: `const f = name;`) in the
// tests, each with the name of the `test(...)`/`it(...)` it is in: the
// argument texts, [[test, args text]].
function testCalls(name, limit = 60) {
  const out = [];
  const seen = new Set();
  for (const file of testFiles()) {
    let text;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      continue;
    }
    if (!text.includes(name)) continue;
    const escaped = (n) => n.replace(/\$/g, '\\$');
    const names = [escaped(name)];
    const alias = new RegExp('\\b(?:const|let|var)\\s+([A-Za-z_$][\\w$]*)\\s*=\\s*(?:[\\w$]+\\.)?' + escaped(name) + '\\s*;', 'g');
    for (const m of text.matchAll(alias)) names.push(escaped(m[1]));
    const tests = [...text.matchAll(TEST_NAME)].map((m) => [m.index, m[2]]);
    const call = new RegExp('(?<![\\w$]|function\\s)(?:' + names.join('|') + ')\\s*\\(', 'g');
    for (const m of text.matchAll(call)) {
      const callee = m[0].replace(/\s*\($/, '');
      const args = argsOf(text.slice(m.index, m.index + 4000).replace(m[0], callee + '('), callee);
      if (args === null || !args.trim() || seen.has(args)) continue;
      seen.add(args);
      const inside = tests.filter(([at]) => at < m.index).pop();
      out.push([inside ? inside[1] : '', args]);
      if (out.length >= limit) return out;
    }
  }
  return out;
}

function round(_, v) {
  return typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1e6) / 1e6 : v;
}

function same(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b));
  if (typeof a === 'number' && typeof b === 'string' && b.trim() !== '' && !isNaN(b)) return same(a, Number(b));
  if (typeof b === 'number' && typeof a === 'string' && a.trim() !== '' && !isNaN(a)) return same(Number(a), b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  return stringify(a, round) === stringify(b, round);
}

// A small random generator of our own: the examined code may replace Math.random.
function rng(seed) {
  let s = seed >>> 0;
  const next = () => ((s = (Math.imul(s ^ (s >>> 15), 2246822507) + 0x9e3779b9) >>> 0) / 4294967296);
  return { below: (n) => Math.floor(next() * n), pick: (xs) => xs[Math.floor(next() * xs.length)] };
}

function nudged(v, r) {
  if (typeof v === 'boolean') return !v;
  if (typeof v === 'number' && Number.isInteger(v)) return v + r.pick([-2, -1, 1, 2, 3, -v, v]);
  if (typeof v === 'number') return Math.round((v + r.pick([-1.5, -0.5, 0.25, 0.5, 1.0])) * 1000) / 1000;
  if (typeof v === 'string') {
    if (!v) return r.pick(['a', ' ', 'A1']);
    const i = r.below(v.length);
    const swapped = [...v].map((c) => (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase())).join('');
    return r.pick([v.slice(0, i), v.slice(i), [...v].reverse().join(''), swapped, v + v[i], v.slice(0, i) + v.slice(i + 1)]);
  }
  if (Array.isArray(v)) {
    const items = v.slice();
    const pick = r.below(5);
    if (pick === 0 && items.length) items.splice(r.below(items.length), 1);
    else if (pick === 1 && items.length) items.push(nudged(r.pick(items), r));
    else if (pick === 2) items.sort(() => r.below(3) - 1);
    else if (pick === 3) items.reverse();
    else if (items.length) {
      const i = r.below(items.length);
      items[i] = nudged(items[i], r);
    }
    return items;
  }
  return v;
}

function near(argsList, count) {
  const r = rng(11);
  const seen = new Set(argsList.map((a) => stringify(a)));
  const out = [];
  for (let n = 0; n < count * 5 && argsList.length && out.length < count; n++) {
    const base = r.pick(argsList).slice();
    if (!base.length) break;
    const i = r.below(base.length);
    base[i] = nudged(base[i], r);
    const key = stringify(base);
    if (!seen.has(key)) {
      seen.add(key);
      out.push(base);
    }
  }
  return out;
}

// The arguments `args` (a call's text between its parentheses) stand for,
// where they are plain data; else null.
function plain(call, args) {
  try {
    const list = call('[' + args + ']');
    const copy = JSON.parse(stringify(list));
    return stringify(copy) === stringify(list) ? copy : null;
  } catch (e) {
    return null; // not plain data, or names only the test knows
  }
}

function examine(file, line, wanted) {
  const full = path.join(root, file);
  const text = fs.readFileSync(full, 'utf8');
  const found = functionAt(text.split('\n'), line, wanted);
  if (!found) return [null, null];
  const { name, doc } = found;
  const cases = examples(doc, name);
  const mod = { exports: {} };
  const ctx = vm.createContext({
    module: mod, exports: mod.exports, require: createRequire(full), console, process, Buffer,
    setTimeout, clearTimeout, setInterval, clearInterval, URL, TextEncoder, TextDecoder,
    __filename: full, __dirname: path.dirname(full),
  });
  try {
    // A shebang line is node's to skip, not the script's.
    vm.runInContext(text.replace(/^#!.*/, ''), ctx, { filename: full, timeout: BUDGET });
  } catch (e) {
    return [name, { examples: 0, passed: 0, near: [], error: (e && e.name) || 'Error' }];
  }
  const call = (code) => vm.runInContext(code, ctx, { timeout: BUDGET });
  let fn;
  try {
    fn = call(name);
  } catch (e) {
    fn = mod.exports && mod.exports[name];
  }
  if (typeof fn !== 'function') return [name, { examples: 0, passed: 0, near: [], error: 'NotAFunction' }];
  ctx.__forq_fn = fn;
  let counted = 0, passed = 0;
  const argsList = [];
  for (const [code, answer] of cases) {
    let want;
    try {
      want = call('(' + jsOf(answer) + ')');
    } catch (e) {
      continue; // an answer that is not a value (prose, a repr)
    }
    counted++;
    try {
      if (same(call(code), want)) passed++;
    } catch (e) {
      // raised or too slow: not passed
    }
    const args = argsOf(code, name);
    const list = args === null ? null : plain(call, args);
    if (list) argsList.push(list);
  }
  const tested = [];
  for (const [test, args] of testCalls(name)) {
    const list = plain(call, args);
    if (list) tested.push([test, list]);
  }
  argsList.push(...tested.map(([, list]) => list));
  const outcome = (args) => {
    ctx.__forq_args = args;
    try {
      const r = stringify(call('__forq_fn(...__forq_args)'), round);
      return 'ok ' + String(r).slice(0, 200);
    } catch (e) {
      return e && e.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT' ? 'slow' : 'raised ' + ((e && e.name) || 'Error');
    }
  };
  const outcomes = near(argsList, Number(nearCount)).map(outcome);
  const calls = tested.map(([test, list]) => [test, outcome(list)]);
  return [name, { examples: counted, passed, near: outcomes, calls }];
}

const result = {};
for (const spec of targets) {
  // FILE:LINE, or FILE::NAME
  const named = spec.indexOf('::');
  const at = named >= 0 ? named : spec.lastIndexOf(':');
  const file = spec.slice(0, at);
  try {
    const [name, data] = named >= 0 ? examine(file, 0, spec.slice(named + 2)) : examine(file, Number(spec.slice(at + 1)));
    if (name) result[file + '::' + name] = data;
  } catch (e) {
    // an unreadable file: no evidence for it
  }
}
const report = Buffer.from(NONCE + ' ' + stringify(result) + '\n');
for (let off = 0; off < report.length; ) off += writeSync(1, report, off);
exit(0);
