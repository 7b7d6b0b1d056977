// forq's dashboard: repositories → a repository's issue queue → a run, with
// its live log, its search tree and its patch. Plain JavaScript, no build
// step. Everything shown is read from the JSON API; live changes arrive
// over Server-Sent Events read with fetch (so the token can ride in a
// header), resumed with Last-Event-ID after a drop so nothing is missed.
'use strict';

const TERMINAL = ['pr_opened', 'patch_ready', 'completed_with_findings', 'needs_review', 'triaged', 'needs_human', 'aborted', 'failed'];
const PATCHED = ['patch_ready', 'completed_with_findings', 'pr_opened'];
const LIFECYCLE = ['queued', 'triaging', 'provisioning', 'implementing', 'testing'];
const ACTIVE = ['triaging', 'provisioning', 'implementing', 'testing'];

// What tests and curious users can look at: every event id each stream
// handed over (duplicates included), and a way to cut the streams.
// `handled` lists what a run page drew from its live stream: the event's
// id and kind, and the run's state when it was drawn.
// `connects` counts each stream's connections (a reconnect adds one).
const forq = (window.forq = { received: {}, handled: [], connects: {}, streams: new Set(), dropStreams() {
  for (const s of forq.streams) s.drop();
} });

// ---- small helpers -------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const svgNS = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v);
  }
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pill = (state) => h('span', { class: `pill ${state}` }, state.replace('_', ' '));
const usd = (n) => (n ? `$${n.toFixed(n < 1 ? 3 : 2)}` : '—');
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
function ago(ms) {
  if (!ms) return '—';
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return `${Math.floor(s)} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}
function debounce(fn, ms) {
  let t = null;
  return (...a) => { clearTimeout(t); t = setTimeout(() => fn(...a), ms); };
}

// ---- the API -------------------------------------------------------------

// `forq serve` prints the dashboard's address with its token in the
// fragment (never sent to the server): keep it for this tab, then drop it
// from the address bar.
(function tokenFromFragment() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (!m) return;
  sessionStorage.setItem('forq-token', decodeURIComponent(m[1]));
  history.replaceState(null, '', location.pathname + location.search);
})();

let asking = null;
function askToken() {
  if (asking) return asking;
  const dialog = document.getElementById('token-dialog');
  asking = new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      sessionStorage.setItem('forq-token', document.getElementById('token-input').value);
      asking = null;
      resolve();
    }, { once: true });
    dialog.showModal();
  });
  return asking;
}

function headers(extra) {
  const t = sessionStorage.getItem('forq-token');
  return Object.assign(t ? { Authorization: `Bearer ${t}` } : {}, extra || {});
}

async function call(path, opts = {}) {
  for (;;) {
    const res = await fetch(path, Object.assign({}, opts, { headers: headers(opts.headers) }));
    if (res.status === 401) { await askToken(); continue; }
    return res;
  }
}

async function api(path, opts) {
  const res = await call(path, opts);
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error || `${res.status} ${res.statusText}`);
  return { body, res };
}

const post = (path, json) => api(path, {
  method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(json || {}),
});

// A Server-Sent Event stream read with fetch. `onEvent` gets each event
// once; after a drop it reconnects with Last-Event-ID. A run's stream
// ends when the run does (`ends`), the queue's never.
function stream(path, { after = 0, ends = false, name, onEvent, onEnd }) {
  let last = after;
  let stopped = false;
  let ctrl = null;
  const seen = (forq.received[name] = forq.received[name] || []);
  const handle = {
    close() { stopped = true; if (ctrl) ctrl.abort(); forq.streams.delete(handle); },
    drop() { if (ctrl) ctrl.abort(); },
  };
  forq.streams.add(handle);
  (async () => {
    while (!stopped) {
      ctrl = new AbortController();
      try {
        const extra = last ? { 'Last-Event-ID': String(last) } : {};
        const res = await call(path, { headers: extra, signal: ctrl.signal });
        if (!res.ok) throw new Error(`${res.status}`);
        forq.connects[name] = (forq.connects[name] || 0) + 1;
        live(true);
        const reader = res.body.getReader();
        const text = new TextDecoder();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += text.decode(value, { stream: true }).replace(/\r/g, '');
          let cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            let id = null, kind = 'message', data = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('id:')) id = Number(line.slice(3).trim());
              else if (line.startsWith('event:')) kind = line.slice(6).trim();
              else if (line.startsWith('data:')) data += line.slice(5).trim();
            }
            if (id === null || !data) continue; // a keep-alive
            seen.push(id);
            if (id <= last) continue;
            last = id;
            onEvent(Object.assign({ id, kind }, JSON.parse(data)));
          }
        }
        if (ends) { stopped = true; forq.streams.delete(handle); if (onEnd) onEnd(); return; }
      } catch (e) {
        if (stopped) return;
        live(false);
      }
      await sleep(500);
    }
  })();
  return handle;
}

function live(on) {
  const el = document.getElementById('live');
  el.classList.toggle('on', on);
  el.textContent = on ? 'live' : 'reconnecting';
}

// ---- the page ------------------------------------------------------------

const view = document.getElementById('view');
let current = null; // the view shown: { onEvent(e), close() }
// Which view is shown: a view's load that ends after the page moved on
// must not paint over the view shown now.
let shownView = 0;
function painter() {
  const mine = shownView;
  const live = () => mine === shownView;
  const paint = (...children) => { if (live()) view.replaceChildren(...children); return live(); };
  paint.live = live;
  return paint;
}
const runs = new Map(); // run id → run, kept current by the queue stream

function crumbs(...parts) {
  const nav = document.getElementById('crumbs');
  nav.replaceChildren();
  for (const p of parts) {
    nav.append(h('span', {}, '/'));
    nav.append(p.href ? h('a', { href: p.href }, p.text) : h('span', {}, p.text));
  }
}

function route() {
  if (current && current.close) current.close();
  current = null;
  shownView += 1;
  const hash = location.hash.slice(1) || '/';
  const [, kind, ...rest] = hash.split('/');
  const arg = decodeURIComponent(rest.join('/'));
  view.replaceChildren(h('div', { class: 'empty' }, 'loading…'));
  const shown = kind === 'repo' ? repoView(arg) : kind === 'run' ? runView(arg) : reposView();
  current = shown;
}

// The queue: every run's events, to keep rows and cards live.
async function startQueueStream() {
  const { body, res } = await api('/api/runs?limit=1000');
  for (const r of body) runs.set(r.id, r);
  const after = Number(res.headers.get('x-forq-last-event-id') || 0);
  stream('/api/stream', {
    after, name: 'queue',
    onEvent(e) {
      const run = runs.get(e.run);
      if (e.kind === 'state' && run) {
        run.state = e.data.to;
        run.reason = e.data.reason || run.reason;
      }
      if (!run || (e.kind === 'state' && TERMINAL.includes(e.data.to))) {
        api(`/api/runs/${e.run}`).then(({ body }) => {
          runs.set(body.run.id, body.run);
          if (current && current.onRun) current.onRun(body.run);
        }).catch(() => {});
      }
      if (current && current.onEvent) current.onEvent(e);
    },
  });
}

// ---- repositories --------------------------------------------------------

function goldenPill(g) {
  if (!g) return null;
  if (g.syncing) return h('span', { class: 'pill syncing', title: 'a push to the default branch is being synced' }, 'golden syncing');
  if (g.status && g.status.state === 'broken') return h('span', { class: 'pill broken', title: g.status.reason }, 'golden broken');
  return h('span', { class: 'pill ready', title: `generation ${g.generation}, saved ${ago(g.saved_at_ms)}` }, 'golden ready');
}

function reposView() {
  crumbs();
  const paint = painter();
  const refresh = debounce(load, 300);
  async function load() {
    let body;
    try { ({ body } = await api('/api/repos')); } catch (e) {
      paint(h('p', { class: 'error' }, e.message)); return;
    }
    const cards = body.repos.map((r) => {
      const st = r.states || {};
      const active = ACTIVE.reduce((n, k) => n + (st[k] || 0), 0);
      const done = (st.patch_ready || 0) + (st.pr_opened || 0) + (st.completed_with_findings || 0);
      const stuck = (st.needs_human || 0) + (st.failed || 0);
      return h('a', { class: 'card', href: `#/repo/${encodeURIComponent(r.repo)}`, 'data-repo': r.repo },
        h('div', { class: 'spread' }, h('div', { class: 'name' }, r.name), goldenPill(r.golden)),
        h('div', { class: 'path' }, r.repo),
        h('div', { class: 'stats' },
          stat(r.issues, 'issues'), stat(active, 'active'), stat(done, 'patches'),
          stat(stuck, 'need a person'), stat(usd(r.cost_usd), 'spent')));
    });
    let fleet = { workers: [] };
    try { ({ body: fleet } = await api('/api/workers')); } catch (e) { /* an older server */ }
    paint(
      h('div', { class: 'spread' }, h('h1', {}, 'Repositories'),
        h('span', { class: 'muted small' }, `${body.repos.length} repositories`)),
      ...body.problems.map((p) => h('p', { class: 'error' }, p)),
      cards.length ? h('div', { class: 'grid' }, cards)
        : h('div', { class: 'panel empty' }, 'No repositories yet: start forq serve with --source, or queue issues with forq queue.'),
      workersPanel(fleet));
  }
  load();
  // Heartbeats change without events: look again now and then.
  const beat = setInterval(refresh, 5000);
  return {
    onEvent(e) { if (e.kind === 'state' || e.kind === 'created' || e.kind === 'claimed') refresh(); },
    close() { clearInterval(beat); },
  };
}

// The forq workers sharing the store (none: runs are driven by the
// processes that queued them).
function workersPanel(fleet) {
  if (!fleet.workers || !fleet.workers.length) return null;
  const queued = (fleet.live && fleet.live.queued) || 0;
  const rows = fleet.workers.map((w) => h('tr', { 'data-worker': w.id, class: w.silent ? 'silent' : '' },
    h('td', {}, h('b', {}, w.id)),
    h('td', { class: 'muted' }, w.host),
    h('td', {}, w.silent ? h('span', { class: 'pill broken', title: 'no heartbeat for 30 s: its runs go to others when their leases end' }, 'silent')
      : w.stopping ? h('span', { class: 'pill syncing' }, 'stopping') : h('span', { class: 'pill ready' }, 'working')),
    h('td', { class: 'load' }, `${w.load} of ${w.jobs}`),
    h('td', {}, ...w.driving.map((id) => h('a', { href: `#/run/${encodeURIComponent(id)}`, class: 'mono small' }, id, ' '))),
    h('td', { class: 'muted small' }, (w.labels || []).join(', ')),
    h('td', { class: 'muted small', title: new Date(w.heartbeat_ms).toISOString() }, ago(w.heartbeat_ms))));
  return h('section', { class: 'panel', id: 'workers' },
    h('div', { class: 'spread' }, h('h2', {}, 'Workers'),
      h('span', { class: 'muted small' }, `${fleet.workers.length} workers, ${queued} runs queued`)),
    h('table', { class: 'table' },
      h('thead', {}, h('tr', {}, ...['worker', 'host', '', 'load', 'driving', 'labels', 'heard from'].map((t) => h('th', {}, t)))),
      h('tbody', {}, ...rows)));
}

function stat(value, label) {
  return h('div', { class: 'stat' }, h('b', {}, value), h('span', {}, label));
}

// ---- a GitHub repository's trusted contributors ---------------------------

// Whether `repo` names a GitHub repository (OWNER/REPO or its URL).
function onGithub(repo) {
  return /^[\w.-]+\/[\w.-]+$/.test(repo) || /github\.com[/:][\w.-]+\/[\w.-]+/.test(repo);
}

// forq.yml's funding.trusted, changed by a pull request a person merges.
function trustedPanel(repo) {
  const panel = h('section', { class: 'panel', id: 'trusted' });
  let list = [];
  const removing = new Set();
  let message = null;
  async function load() {
    try { ({ body: { trusted: list } } = await api(`/api/trusted?repo=${encodeURIComponent(repo)}`)); } catch (e) {
      panel.replaceChildren(h('h2', {}, 'Trusted contributors'), h('p', { class: 'note' }, e.message)); return;
    }
    draw();
  }
  function draw() {
    const input = h('input', { id: 'trust-add', type: 'text', placeholder: 'logins to trust, comma-separated',
      'aria-label': 'logins to trust' });
    const go = h('button', { class: 'primary', id: 'trust-propose', onclick: async () => {
      const add = input.value.split(/[\s,]+/).filter(Boolean);
      go.disabled = true;
      try {
        const { body } = await post('/api/trusted', { repo, add, remove: [...removing] });
        message = h('span', {}, 'Proposed in ',
          h('a', { id: 'trust-pr', href: body.pull_request.html_url, target: '_blank', rel: 'noopener' }, body.pull_request.html_url),
          `: once merged, ${body.after.length ? body.after.join(', ') : 'nobody'} will be trusted.`);
        removing.clear();
      } catch (e) { message = e.message; }
      draw();
    } }, 'Propose');
    panel.replaceChildren(
      h('div', { class: 'spread' }, h('h2', {}, 'Trusted contributors'),
        h('span', { class: 'muted small' }, 'forq.yml funding.trusted')),
      h('p', { class: 'note' }, 'Their issues run on your model key when runs are contributor-funded. A change is a pull request to forq.yml: nothing changes until a person merges it.'),
      h('ul', { class: 'trusted' }, list.length ? list.map((login) => h('li', { 'data-login': login, class: removing.has(login) ? 'removing' : '' },
        h('span', { class: 'mono' }, login),
        h('button', { class: 'small', 'aria-label': `stop trusting ${login}`,
          onclick: () => { removing.has(login) ? removing.delete(login) : removing.add(login); draw(); } },
        removing.has(login) ? 'keep' : 'remove'))) : h('li', { class: 'muted' }, 'nobody yet')),
      h('div', { class: 'toolbar' }, input, go),
      ...(message ? [h('p', { class: 'note', id: 'trust-message' }, message)] : []));
  }
  load();
  return panel;
}

// ---- a repository's issue queue -------------------------------------------

function repoView(repo) {
  let data = null;
  const picked = new Set();
  let message = '';
  const refresh = debounce(load, 150);
  // Made once: a redraw of the queue keeps it as it is.
  const trust = onGithub(repo) ? trustedPanel(repo) : null;
  const paint = painter();
  async function load() {
    try { ({ body: data } = await api(`/api/issues?repo=${encodeURIComponent(repo)}`)); } catch (e) {
      paint(h('p', { class: 'error' }, e.message)); return;
    }
    if (!paint.live()) return;
    crumbs({ text: data.name, href: `#/repo/${encodeURIComponent(repo)}` });
    draw();
  }
  function draw() {
    const rows = data.issues;
    const count = (pred) => rows.filter((r) => r.run && pred(r.run.state)).length;
    const queueable = rows.filter((r) => r.queueable);
    const all = h('input', { type: 'checkbox', 'aria-label': 'select every issue',
      checked: queueable.length > 0 && queueable.every((r) => picked.has(r.issue.id)),
      onchange: (ev) => { for (const r of queueable) ev.target.checked ? picked.add(r.issue.id) : picked.delete(r.issue.id); draw(); } });
    const action = h('select', { id: 'action', 'aria-label': 'action' },
      h('option', { value: 'auto' }, 'as forq.yml says'), h('option', { value: 'fix' }, 'fix'),
      h('option', { value: 'triage' }, 'triage only'));
    const go = h('button', { class: 'primary', id: 'burn', disabled: picked.size === 0,
      onclick: async () => {
        go.disabled = true;
        try {
          const { body } = await post('/api/queue', { repo, ids: [...picked], action: action.value, again: true });
          message = `${body.runs.length} queued` + (body.standing.length ? `, ${body.standing.length} standing already` : '');
          for (const r of body.runs) runs.set(r.id, r);
          picked.clear();
        } catch (e) { message = e.message; }
        load();
      } }, picked.size ? `Burn down ${picked.size}` : 'Burn down');
    const table = h('table', {},
      h('thead', {}, h('tr', {}, h('th', {}, all), h('th', {}, 'Issue'), h('th', {}, 'State'),
        h('th', { class: 'num' }, 'Patch'), h('th', { class: 'num' }, 'Cost'), h('th', {}, 'Updated'))),
      h('tbody', {}, rows.map((r) => {
        const run = r.run;
        const state = run ? run.state : 'open';
        return h('tr', { 'data-issue': r.issue.id, 'data-state': state, class: picked.has(r.issue.id) ? 'selected' : '' },
          h('td', {}, r.queueable ? h('input', { type: 'checkbox', 'aria-label': `select issue ${r.issue.id}`,
            checked: picked.has(r.issue.id),
            onchange: (ev) => { ev.target.checked ? picked.add(r.issue.id) : picked.delete(r.issue.id); draw(); } }) : null),
          h('td', {}, h('span', { class: 'muted mono' }, `#${r.issue.id} `),
            run ? h('a', { href: `#/run/${run.id}` }, r.issue.title) : r.issue.title,
            (r.issue.labels || []).map((l) => h('span', { class: 'label' }, l))),
          h('td', { class: 'state' }, run ? pill(state) : h('span', { class: 'muted small' }, 'open'),
            run && run.reason && TERMINAL.includes(state) ? h('div', { class: 'note' }, run.reason) : null),
          h('td', { class: 'num' }, run && run.patch_lines != null ? `${run.patch_lines} lines` : '—'),
          h('td', { class: 'num' }, run ? usd(run.cost_usd) : '—'),
          h('td', { class: 'muted small' }, run ? ago(run.updated_ms) : ''));
      })));
    paint(
      h('section', { class: 'panel' },
        h('div', { class: 'spread' }, h('h1', {}, data.name, ' ', goldenPill(data.golden)), h('span', { class: 'mono muted small' }, repo)),
        h('div', { class: 'stats', id: 'counters' },
          stat(rows.length, 'issues'), stat(count((s) => s === 'queued'), 'queued'),
          stat(count((s) => ACTIVE.includes(s)), 'active'),
          stat(count((s) => PATCHED.includes(s)), 'patches'),
          stat(count((s) => s === 'needs_human' || s === 'failed' || s === 'aborted'), 'need a person'))),
      ...data.problems.map((p) => h('p', { class: 'error' }, p)),
      h('section', { class: 'panel flush' },
        h('div', { class: 'toolbar' }, h('span', { class: 'grow note' }, message || `${picked.size} selected`), action, go),
        rows.length ? table : h('div', { class: 'empty' }, 'No issues: give forq serve a --source for this repository.')),
      ...(trust ? [trust] : []));
  }
  load();
  return {
    onEvent(e) {
      const run = runs.get(e.run);
      if (!run || run.repo === repo) refresh();
    },
  };
}

// ---- a run ---------------------------------------------------------------

function describe(e) {
  const d = e.data || {};
  switch (e.kind) {
    case 'state': return `${d.from} → ${d.to}${d.reason ? ` (${d.reason})` : ''}`;
    case 'node': return `node ${d.id} ${d.status}: ${d.hypothesis || ''}${d.status === 'exploring' ? '' : ` (${d.diff_lines} lines)`}`;
    case 'best': return `handed back node ${d.id}`;
    case 'checkpoint': return `checkpoint ${d.phase}`;
    case 'note': return d.text;
    case 'cost': return `${d.phase}: ${usd(d.usd)}`;
    case 'contract': return `${d.qualname} (${d.file}:${d.line}) ${d.class}: ${d.reason}`;
    case 'ripple': return `${(d.findings || []).length} caller(s) to check${(d.unprocessed || []).length ? `, ${d.unprocessed.length} beyond depth ${d.depth}` : ''}`;
    case 'agent': return d.tool ? `step ${d.step}: ${d.tool}` : JSON.stringify(d);
    default: return JSON.stringify(d);
  }
}

function renderDiff(text) {
  return h('pre', { class: 'diff' }, text.split('\n').map((l) => {
    const cls = /^(diff --git|--- |\+\+\+ |index )/.test(l) ? 'file'
      : l.startsWith('@@') ? 'hunk' : l.startsWith('+') ? 'add' : l.startsWith('-') ? 'del' : '';
    return h('div', { class: cls }, l || ' ');
  }));
}

function runView(id) {
  crumbs({ text: id });
  let run = null;
  let triage = null;
  let preview = null;
  let review = null;
  const log = h('div', { class: 'log', id: 'log' });
  const nodes = new Map();
  let picked = null;
  // The green node handed back, once the search says.
  let chosen = null;
  let replaying = null;
  let handle = null;
  const parts = {
    head: h('section', { class: 'panel' }),
    tree: h('section', { class: 'panel', id: 'tree' }),
    patch: h('section', { class: 'panel', id: 'patch' }, h('h3', {}, 'Patch'), h('p', { class: 'muted small' }, 'Written when the search ends.')),
    log: h('section', { class: 'panel' }, h('h3', {}, 'Live log'), log),
  };

  function addEvent(e) {
    log.append(h('div', { 'data-id': e.id }, h('span', { class: 'k' }, `${clock(e.at_ms)} ${e.kind}`), ' ', describe(e)));
    log.scrollTop = log.scrollHeight;
    if (e.kind === 'node') { nodes.set(e.data.id, Object.assign(nodes.get(e.data.id) || {}, e.data)); drawTree(); }
    if (e.kind === 'best') { chosen = e.data.id; drawTree(); }
    if (e.kind === 'state') { run.state = e.data.to; run.reason = e.data.reason || run.reason; drawHead(); }
    if (e.kind === 'cost') { run.cost_usd = (run.cost_usd || 0) + (e.data.usd || 0); drawHead(); }
  }

  function drawHead() {
    const state = run.state;
    const reached = LIFECYCLE.indexOf(state);
    const over = TERMINAL.includes(state);
    const good = PATCHED.includes(state) || state === 'triaged';
    const steps = h('ol', { class: 'steps', id: 'lifecycle' },
      LIFECYCLE.map((s, i) => h('li', { class: over || i < reached ? 'done' : i === reached ? 'now' : '' }, s)),
      h('li', { class: over ? (good ? 'done' : 'end-bad') : '' }, over ? state.replace('_', ' ') : 'done'));
    const patched = PATCHED.includes(state);
    const actions = h('div', { class: 'row' },
      !over ? h('button', { onclick: () => act('abort') }, 'Abort') : null,
      !over ? h('button', { onclick: () => act('resume'), title: 'continue an interrupted run from its last checkpoint' }, 'Resume') : null,
      patched && !preview ? h('button', { class: 'primary', id: 'preview', onclick: startPreview,
        title: "run the fix: forq.yml's golden.start in a sandbox of its own" }, 'Preview') : null,
      preview ? [h('a', { href: preview.url, target: '_blank', rel: 'noopener', id: 'preview-link' }, 'Open the preview ↗'),
        h('button', { onclick: stopPreview }, 'Stop preview')] : null,
      patched && state !== 'pr_opened' ? h('button', { id: 'push', onclick: () => publish('push', { pull_request: true }),
        title: 'push the branch to origin and open a pull request (the server needs GITHUB_TOKEN)' }, 'Push & open PR') : null);
    const reviewing = state === 'needs_review' ? (() => {
      const why = h('input', { type: 'text', id: 'reject-reason', placeholder: 'why (for the record)', 'aria-label': 'reason' });
      return h('div', { class: 'panel', id: 'review' },
        h('h3', {}, 'Waiting for your review'),
        h('p', {}, review ? review.what : run.reason),
        h('div', { class: 'row' },
          h('button', { class: 'primary', id: 'approve', onclick: () => decide('approve', {}) }, 'Approve'),
          why, h('button', { id: 'reject', onclick: () => decide('reject', { reason: why.value }) }, 'Reject')));
    })() : null;
    const onGithub = /\/issues\/\d+$/.test(run.issue.url || '');
    const comment = h('input', { type: 'text', id: 'comment', placeholder: 'comment on the issue', 'aria-label': 'comment' });
    const issueActions = onGithub ? h('div', { class: 'row' }, comment,
      h('button', { onclick: () => publish('comment', { body: comment.value }) }, 'Comment'),
      h('button', { onclick: () => publish('close', comment.value ? { body: comment.value } : {}) }, 'Close issue')) : null;
    const verdict = triage && !triage.skipped
      ? `${triage.attempt_fix ? 'fix' : 'skip'} (${Number(triage.confidence).toFixed(2)}): ${triage.reason}`
      : triage ? `skipped: ${triage.reason}` : '—';
    const took = run.started_ms ? `${Math.round((run.updated_ms - run.started_ms) / 1000)} s` : '—';
    parts.head.replaceChildren(
      h('div', { class: 'spread' },
        h('h1', {}, h('span', { class: 'muted' }, `#${run.issue.id} `), run.issue.title),
        h('span', { id: 'state' }, pill(state))),
      h('div', { class: 'row small muted' }, h('a', { href: `#/repo/${encodeURIComponent(run.repo)}` }, run.repo),
        h('span', {}, run.action), h('span', { class: 'mono' }, `run ${run.id}`)),
      steps,
      h('div', { class: 'cols' },
        h('dl', { class: 'facts' },
          h('dt', {}, 'reason'), h('dd', {}, run.reason || '—'),
          run.failure ? [h('dt', {}, 'failure'), h('dd', { id: 'failure' }, run.failure)] : null,
          h('dt', {}, 'triage'), h('dd', { id: 'verdict' }, verdict),
          h('dt', {}, 'cost'), h('dd', {}, usd(run.cost_usd)),
          h('dt', {}, 'time'), h('dd', {}, took),
          h('dt', {}, 'patch'), h('dd', {}, run.patch_lines != null ? `${run.patch_lines} lines` : '—'),
          h('dt', {}, 'branch'), h('dd', { class: 'mono' }, run.branch || '—'),
          run.branch ? [h('dt', {}, 'push it'), h('dd', { class: 'mono' }, `forq push ${run.id} --pr`)] : null),
        h('div', {}, actions, issueActions, h('p', { class: 'note', id: 'act-note' }))),
      ...(reviewing ? [reviewing] : []));
  }

  async function startPreview() {
    const note = document.getElementById('act-note');
    note.textContent = 'starting the preview…';
    try {
      ({ body: preview } = await post(`/api/runs/${id}/preview`));
      note.textContent = `serving ${preview.start} on port ${preview.port}`;
    } catch (e) { note.textContent = e.message; }
    drawHead();
  }

  async function stopPreview() {
    try { await api(`/api/previews/${preview.key}`, { method: 'DELETE' }); } catch (e) { /* gone already */ }
    preview = null;
    drawHead();
  }

  // Approve (the run goes on: its page follows it again) or reject.
  async function decide(what, body) {
    const note = document.getElementById('act-note');
    try {
      const { body: moved } = await post(`/api/runs/${id}/${what}`, body);
      run = moved; review = null;
      if (what === 'approve') route(); else drawHead();
    } catch (e) { note.textContent = e.message; }
  }

  async function publish(what, body) {
    const note = document.getElementById('act-note');
    try {
      const { body: done } = await post(`/api/runs/${id}/${what}`, body);
      note.textContent = done.pull_request ? `pull request: ${done.pull_request.html_url}`
        : done.done || `pushed ${done.branch} to ${done.remote}`;
    } catch (e) { note.textContent = e.message; }
  }

  async function act(what) {
    const note = document.getElementById('act-note');
    try { await post(`/api/runs/${id}/${what}`); note.textContent = `${what} asked`; } catch (e) { note.textContent = e.message; }
  }

  // The tree, laid out left to right: the root at the left, each node's
  // children in a column to its right, a parent level with the middle of
  // its children; beside each node, the hypothesis that made it (the label
  // of the edge into it).
  function drawTree() {
    const list = [...nodes.values()].sort((a, b) => a.id - b.id);
    const candidates = list.filter((n) => n.id !== 0);
    const green = candidates.filter((n) => n.status === 'green');
    // The node the evidence handed back; before the end, the smallest green.
    const best = (chosen != null && nodes.get(chosen))
      || green.reduce((b, n) => (!b || n.diff_lines < b.diff_lines ? n : b), null);
    const secs = list.reduce((m, n) => Math.max(m, (n.at_ms || 0) + (n.eval_ms || 0)), 0) / 1000;
    const counter = h('div', { class: 'counter', id: 'counter' },
      h('b', {}, '1'), ' bug · ', h('b', {}, candidates.length), ' candidates · ', h('b', {}, green.length), ' green · best ',
      h('b', {}, best ? `${best.diff_lines} lines` : '—'), ' · ', h('b', {}, `${Math.round(secs)} s`));
    const head = h('div', { class: 'tree-head' }, h('h3', {}, 'Search tree'), counter,
      h('div', { class: 'legend' }, ['exploring', 'red', 'green', 'pruned'].map((k) => h('span', {}, h('i', { class: k }), k))),
      h('button', { id: 'replay', onclick: replay, disabled: !list.length || !TERMINAL.includes(run.state) }, 'Replay'));
    if (!list.length) {
      parts.tree.replaceChildren(head, h('div', { class: 'empty' }, 'No search yet: nodes appear here as candidates are tried.'));
      return;
    }
    const known = (n) => n.parent !== null && n.parent !== undefined && nodes.has(n.parent);
    const kids = new Map();
    for (const n of list.filter(known)) {
      if (!kids.has(n.parent)) kids.set(n.parent, []);
      kids.get(n.parent).push(n);
    }
    const pos = new Map();
    let row = 0;
    const place = (n, depth) => {
      const c = kids.get(n.id) || [];
      c.forEach((k) => place(k, depth + 1));
      const y = c.length ? (pos.get(c[0].id).y + pos.get(c[c.length - 1].id).y) / 2 : row++;
      pos.set(n.id, { x: depth, y });
    };
    list.filter((n) => !known(n)).forEach((n) => place(n, 0));
    const onPath = new Set();
    for (let n = best; n; n = nodes.get(n.parent)) onPath.add(n.id);
    const col = 400, line = 22, pad = 20;
    const depth = Math.max(...[...pos.values()].map((p) => p.x));
    const width = Math.max((depth + 1) * col + pad * 2, 320), height = row * line + pad * 2;
    const at = (id) => ({ x: pad + 10 + pos.get(id).x * col, y: pad + pos.get(id).y * line + line / 2 });
    const svg = s('svg', { class: 'tree', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'the search tree' });
    for (const n of list.filter(known)) {
      const a = at(n.parent), b = at(n.id);
      const mx = (a.x + b.x) / 2;
      svg.append(s('path', { class: onPath.has(n.id) ? 'edge best' : 'edge', d: `M${a.x},${a.y} C${mx},${a.y} ${mx},${b.y} ${b.x},${b.y}` }));
    }
    for (const n of list) {
      const p = at(n.id);
      const cls = ['node', n.id === 0 ? 'root' : n.status, best && n.id === best.id ? 'best' : '', picked === n.id ? 'picked' : ''].join(' ');
      const text = n.id === 0 ? 'the original code' : (n.hypothesis || '');
      const short = text.length > 54 ? `${text.slice(0, 53)}…` : text;
      svg.append(s('g', { class: cls, 'data-node': n.id, 'data-status': n.status, transform: `translate(${p.x},${p.y})`,
        onclick: () => { picked = n.id; drawTree(); } },
        s('title', {}, `${n.id}: ${text} (${n.status})`),
        s('circle', { r: n.id === 0 ? 7 : 5.5 }),
        n.id === 0 ? s('text', { x: -6, y: -11 }, short) : s('text', { x: 10, y: 3.5 }, short)));
    }
    parts.tree.replaceChildren(head, h('div', { class: 'tree-box' }, svg), detail(nodes.get(picked)));
  }

  function detail(n) {
    if (!n) return h('p', { class: 'note' }, 'Click a node to see its change and its test results.');
    const t = n.tests;
    return h('div', { class: 'panel', id: 'node-detail' },
      h('div', { class: 'spread' }, h('h2', {}, `Node ${n.id}`), pill(n.status)),
      h('p', {}, n.hypothesis || ''),
      h('dl', { class: 'facts' },
        h('dt', {}, 'lines'), h('dd', {}, n.diff_lines != null ? n.diff_lines : '—'),
        h('dt', {}, 'why'), h('dd', {}, n.reason || '—'),
        h('dt', {}, 'targets'), h('dd', {}, t ? `${t.target_passed} of ${t.target_total} passing` : '—'),
        t && t.failing.length ? [h('dt', {}, 'failing'), h('dd', { class: 'mono' }, t.failing.join(', '))] : null,
        t && t.broken.length ? [h('dt', {}, 'broke'), h('dd', { class: 'mono' }, t.broken.join(', '))] : null,
        h('dt', {}, 'took'), h('dd', {}, `${n.eval_ms || 0} ms`),
        n.evidence ? [h('dt', {}, 'evidence'), h('dd', { id: 'evidence' }, `${n.evidence.verdict}: ${n.evidence.why}`)] : null),
      n.change ? renderDiff(n.change) : null);
  }

  // Replays a finished search: its node events again, in order, in about
  // four seconds.
  async function replay() {
    const events = (await api(`/api/runs/${id}/events`)).body.filter((e) => e.kind === 'node');
    if (replaying) clearTimeout(replaying);
    nodes.clear();
    drawTree();
    const step = Math.max(4000 / Math.max(events.length, 1), 15);
    let i = 0;
    const next = () => {
      if (i >= events.length) { replaying = null; return; }
      const e = events[i++];
      nodes.set(e.data.id, Object.assign(nodes.get(e.data.id) || {}, e.data));
      drawTree();
      replaying = setTimeout(next, step);
    };
    next();
  }

  async function loadPatch() {
    const res = await call(`/api/runs/${id}/patch`);
    if (!res.ok) return;
    const text = await res.text();
    parts.patch.replaceChildren(h('div', { class: 'spread' }, h('h3', {}, 'Patch'),
      h('span', { class: 'muted small' }, run.branch ? `on ${run.branch}` : '')), renderDiff(text));
  }

  // A run without node events (older runs) draws its saved tree.json.
  async function loadSavedTree() {
    const res = await call(`/api/runs/${id}/tree`);
    if (!res.ok) return;
    const tree = await res.json();
    for (const n of tree.nodes || []) {
      nodes.set(n.id, { id: n.id, parent: n.parent, depth: n.depth, status: n.status, hypothesis: n.hypothesis,
        reason: n.reason, diff_lines: n.score ? n.score.diff_lines : 0, change: n.change, at_ms: n.at_ms, eval_ms: n.eval_ms,
        tests: n.judgement ? { target_passed: n.judgement.target_passed, target_total: n.judgement.target_total,
          failing: n.judgement.failing, broken: n.judgement.broken } : null, evidence: n.evidence });
    }
    if (tree.best != null) chosen = tree.best;
    drawTree();
  }

  const paint = painter();
  (async () => {
    let body;
    try { ({ body } = await api(`/api/runs/${id}`)); } catch (e) {
      paint(h('p', { class: 'error' }, e.message)); return;
    }
    run = body.run;
    triage = body.triage;
    review = body.review;
    try { preview = (await api('/api/previews')).body.find((p) => p.run === id) || null; } catch (e) { preview = null; }
    if (!paint(parts.head, parts.tree, h('div', { class: 'cols' }, parts.patch, parts.log))) return;
    crumbs({ text: run.repo.split('/').filter(Boolean).pop(), href: `#/repo/${encodeURIComponent(run.repo)}` }, { text: `run ${id}` });
    drawHead();
    let after = 0;
    for (const e of body.events) { addEvent(e); after = Math.max(after, e.id); }
    forq.received[`run:${id}`] = body.events.map((e) => e.id);
    drawTree();
    if (!nodes.size && TERMINAL.includes(run.state)) loadSavedTree();
    if (TERMINAL.includes(run.state)) { loadPatch(); return; }
    handle = stream(`/api/runs/${id}/stream`, {
      after, ends: true, name: `run:${id}`,
      onEvent(e) {
        addEvent(e);
        forq.handled.push({ id: e.id, kind: e.kind, state: run.state, nodes: nodes.size });
      },
      async onEnd() {
        const { body } = await api(`/api/runs/${id}`);
        run = body.run; triage = body.triage;
        drawHead(); drawTree(); loadPatch();
        document.body.dataset.runEnded = id;
      },
    });
  })();
  return {
    close() { if (handle) handle.close(); if (replaying) clearTimeout(replaying); },
    onRun(r) { if (r.id === id && run) { Object.assign(run, r); drawHead(); } },
  };
}

// ---- start ---------------------------------------------------------------

(function theme() {
  const root = document.documentElement;
  const saved = localStorage.getItem('forq-theme');
  const dark = saved ? saved === 'dark' : window.matchMedia('(prefers-color-scheme: dark)').matches;
  root.dataset.theme = dark ? 'dark' : 'light';
  document.getElementById('theme').addEventListener('click', () => {
    root.dataset.theme = root.dataset.theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem('forq-theme', root.dataset.theme);
  });
})();

window.addEventListener('hashchange', route);
startQueueStream().catch((e) => { live(false); console.error(e); });
route();
