// ebb dashboard: reads the HTTP API of the server that served this page and
// draws it, refreshing every few seconds without reloading. Plain browser
// JavaScript, no dependencies, no requests to any other origin.
'use strict';

(() => {
  const TOKEN_KEY = 'ebb.dashboard.token';
  const SCOPES_KEY = 'ebb.dashboard.scopes';
  // The expiry chart and the error counts look this far back.
  const HISTORY_MS = 10 * 60 * 1000;
  const ERROR_WINDOW_MS = 5 * 60 * 1000;
  // A timeline draws at most this many shards, those nearest the end.
  const MAX_SHARDS = 60;

  const $ = (id) => document.getElementById(id);

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY) || '',
    scopes: sessionStorage.getItem(SCOPES_KEY) || '',
    samples: [],
    every: 5,
    timer: 0,
    running: false,
    again: false,
    rendered: {},
    loginShown: false,
  };

  // ---- DOM helpers -------------------------------------------------------

  // h builds an element. attrs: class, dataset (object), text, on<event>
  // handlers, and any other attribute. Children are nodes or strings;
  // strings become text, never markup.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    setAttrs(el, attrs);
    append(el, children);
    return el;
  }

  const SVG_NS = 'http://www.w3.org/2000/svg';
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG_NS, tag);
    setAttrs(el, attrs);
    append(el, children);
    return el;
  }

  function setAttrs(el, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'dataset') Object.assign(el.dataset, v);
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }

  function append(el, children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }

  function code(text) { return h('code', {}, text); }

  // replace puts the panel's new content in place, keeping the focus on
  // the element with the same data-key, so a refresh never throws a
  // keyboard user back to the top. It does nothing when the content is
  // unchanged.
  function replace(container, key, build) {
    if (state.rendered[container.id] === key) return;
    state.rendered[container.id] = key;
    const active = document.activeElement;
    const focusKey = active && container.contains(active) ? active.dataset.key : undefined;
    container.replaceChildren();
    append(container, [build()]);
    if (focusKey) {
      const again = container.querySelector(`[data-key="${CSS.escape(focusKey)}"]`);
      if (again) again.focus();
    }
  }

  // ---- Formatting ----------------------------------------------------------

  const UNIT_MS = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1e3, m: 6e4, h: 3.6e6 };

  // parseDuration reads a Go duration string ("1h30m", "500ms") in ms.
  function parseDuration(text) {
    if (typeof text !== 'string' || text === '') return NaN;
    let rest = text, sign = 1;
    if (rest[0] === '-' || rest[0] === '+') { sign = rest[0] === '-' ? -1 : 1; rest = rest.slice(1); }
    if (rest === '0') return 0;
    const re = /^(\d+(?:\.\d*)?)(ns|us|µs|ms|s|m|h)/;
    let total = 0;
    while (rest.length > 0) {
      const m = re.exec(rest);
      if (!m) return NaN;
      total += parseFloat(m[1]) * UNIT_MS[m[2]];
      rest = rest.slice(m[0].length);
    }
    return sign * total;
  }

  // formatDuration writes ms, to the second, as the API writes durations.
  function formatDuration(ms) {
    if (!isFinite(ms)) return '—';
    const neg = ms < 0;
    let left = Math.round(Math.abs(ms) / 1000);
    if (left === 0) return Math.abs(ms) < 1 ? '0s' : `${Math.round(Math.abs(ms))}ms`;
    const hours = Math.floor(left / 3600); left -= hours * 3600;
    const mins = Math.floor(left / 60); left -= mins * 60;
    // As the API writes them: no zero trailing units ("2h", "1h30m").
    let out = '';
    if (hours) out = left ? `${hours}h${mins}m${left}s` : mins ? `${hours}h${mins}m` : `${hours}h`;
    else if (mins) out = left ? `${mins}m${left}s` : `${mins}m`;
    else out = `${left}s`;
    return (neg ? '-' : '') + out;
  }

  // formatSeconds writes a lag in seconds for people: "0.84 s", "3 min 5 s".
  function formatSeconds(sec) {
    if (sec === null || sec === undefined || !isFinite(sec)) return '—';
    if (sec < 10) return `${sec.toFixed(2)} s`;
    if (sec < 120) return `${sec.toFixed(0)} s`;
    if (sec < 7200) return `${Math.floor(sec / 60)} min ${Math.round(sec % 60)} s`;
    return `${(sec / 3600).toFixed(1)} h`;
  }

  function formatCount(n) {
    if (n === null || n === undefined || !isFinite(n)) return '—';
    return Math.round(n).toLocaleString('en-US');
  }

  const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

  function formatBytes(n) {
    if (n === null || n === undefined || !isFinite(n)) return '—';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
  }

  // UTC, to the minute unless seconds matter: "2026-11-22 10:00Z".
  function formatTime(ms) {
    if (!isFinite(ms)) return '—';
    const iso = new Date(ms).toISOString();
    const secs = iso.slice(17, 19);
    return `${iso.slice(0, 10)} ${iso.slice(11, 16)}${secs === '00' ? '' : ':' + secs}Z`;
  }

  function shortTime(ms) {
    const iso = new Date(ms).toISOString();
    return `${iso.slice(5, 10)} ${iso.slice(11, 16)}`;
  }

  function clockTime(date) { return date.toISOString().slice(11, 19) + 'Z'; }

  function capacityWords(mode) {
    return mode === 'provisioned' ? 'provisioned' : mode === 'on_demand' ? 'on-demand' : (mode || 'unknown');
  }

  // ---- The API -------------------------------------------------------------

  async function api(method, path) {
    const headers = { Accept: 'application/json' };
    if (state.token) headers.Authorization = `Bearer ${state.token}`;
    let resp;
    try {
      resp = await fetch(path, { method, headers, cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      return { status: 0, ok: false, body: null, error: 'the server did not answer' };
    }
    const ctype = resp.headers.get('Content-Type') || '';
    let body = null;
    try {
      const text = await resp.text();
      body = ctype.startsWith('application/json') ? JSON.parse(text) : text;
    } catch (e) {
      body = null;
    }
    let error = '';
    if (!resp.ok) {
      const e = body && body.error;
      error = e && e.message ? `${e.message} (${e.code}, HTTP ${resp.status})` : `HTTP ${resp.status}`;
    }
    return { status: resp.status, ok: resp.ok, body, error };
  }

  const esc = encodeURIComponent;

  // parseScopes reads the scopes typed at sign-in ("index:events list:user"):
  // the name is everything after the first colon, as in the auth file.
  function parseScopes(text) {
    const out = { index: [], list: [], table: [] };
    for (const word of (text || '').split(/[\s,]+/)) {
      const i = word.indexOf(':');
      if (i <= 0) continue;
      const kind = word.slice(0, i), name = word.slice(i + 1);
      if (out[kind] && name && !out[kind].includes(name)) out[kind].push(name);
    }
    return out;
  }

  // ---- Prometheus text -------------------------------------------------------

  // parseMetrics returns every sample of the exposition as
  // {name, labels, value}.
  function parseMetrics(text) {
    const out = [];
    if (typeof text !== 'string') return out;
    const lineRe = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)/;
    const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
    for (const line of text.split('\n')) {
      if (line === '' || line[0] === '#') continue;
      const m = lineRe.exec(line);
      if (!m) continue;
      const labels = {};
      if (m[2]) {
        for (const l of m[2].matchAll(labelRe)) labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
      }
      const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : parseFloat(m[3]);
      out.push({ name: m[1], labels, value });
    }
    return out;
  }

  // sum adds the samples of a metric whose labels match: zero when the
  // metric is exported without such a series yet, null when it is not
  // exported at all.
  function sum(metrics, name, match) {
    let total = null;
    for (const m of metrics) {
      if (m.name !== name) continue;
      if (total === null) total = 0;
      if (!match || match(m.labels)) total += m.value;
    }
    return total;
  }

  // sample takes from /metrics what the expiry and health panels chart.
  function sample(metrics) {
    const build = metrics.find((m) => m.name === 'ebb_build_info');
    return {
      at: Date.now(),
      watermark: sum(metrics, 'ebb_expiry_watermark_lag_seconds'),
      lagSum: sum(metrics, 'ebb_expiry_lag_seconds_sum'),
      lagCount: sum(metrics, 'ebb_expiry_lag_seconds_count'),
      deleted: sum(metrics, 'ebb_expiry_deleted_total'),
      sweepsOK: sum(metrics, 'ebb_expiry_sweeps_total', (l) => l.result === 'ok'),
      sweepErrors: sum(metrics, 'ebb_expiry_sweeps_total', (l) => l.result === 'error'),
      reconcileFailures: sum(metrics, 'ebb_reconcile_failures_total'),
      http5xx: sum(metrics, 'ebb_http_requests_total', (l) => /^5/.test(l.code || '')),
      shed: sum(metrics, 'ebb_http_shed_total'),
      build: build ? build.labels : null,
    };
  }

  function addSample(smp) {
    state.samples.push(smp);
    const cutoff = smp.at - HISTORY_MS;
    while (state.samples.length > 2 && state.samples[0].at < cutoff) state.samples.shift();
  }

  // sampleBefore returns the oldest sample no older than ms before the
  // latest, for rates over that window.
  function sampleBefore(ms) {
    const last = state.samples[state.samples.length - 1];
    return state.samples.find((x) => x.at >= last.at - ms) || last;
  }

  function delta(a, b, field) {
    if (a[field] === null || b[field] === null) return null;
    return Math.max(0, b[field] - a[field]);
  }

  // ---- Loading -----------------------------------------------------------------

  async function load() {
    const scopes = parseScopes(state.scopes);
    const indexList = await api('GET', '/v1/indexes');
    if (indexList.status === 401) return { login: true, refused: state.token !== '', error: indexList.error };
    if (indexList.status === 0) return { down: true };

    let indexes;
    if (indexList.ok) {
      indexes = indexList.body.indexes.map((idx) => ({ idx }));
    } else if (indexList.status === 403) {
      indexes = await Promise.all(scopes.index.map(async (name) => {
        const r = await api('GET', `/v1/indexes/${esc(name)}`);
        return r.ok ? { idx: r.body } : { name, error: r.error };
      }));
    } else {
      indexes = [];
    }
    const [plans, cluster, adminTables, features, metrics, healthz, readyz, usage] = await Promise.all([
      Promise.all(indexes.map((x) => (x.idx ? api('POST', `/v1/indexes/${esc(x.idx.name)}/reconcile?dry_run=true`) : null))),
      api('GET', '/v1/admin/cluster'),
      api('GET', '/v1/admin/tables'),
      loadFeatures(scopes),
      api('GET', '/metrics'),
      api('GET', '/healthz'),
      api('GET', '/readyz'),
      api('GET', '/v1/admin/usage?cost=true'),
    ]);
    indexes.forEach((x, i) => { x.plan = plans[i]; });
    return {
      indexList, indexes, scopes, cluster, adminTables, features,
      tables: await loadTables(scopes, adminTables),
      metrics, healthz, readyz, usage,
    };
  }

  async function loadFeatures(scopes) {
    const all = await api('GET', '/v1/list-features');
    if (all.ok || all.status !== 403) return { res: all, features: all.ok ? all.body.features : [] };
    const per = await Promise.all(scopes.list.map((et) => api('GET', `/v1/list-features/${esc(et)}`)));
    const failed = per.find((r) => !r.ok);
    return {
      res: all, scoped: true, features: per.flatMap((r) => (r.ok ? r.body.features : [])),
      error: failed ? failed.error : '',
    };
  }

  async function loadTables(scopes, adminTables) {
    if (adminTables.ok) return { counted: true, tables: adminTables.body.logical_tables || [] };
    const all = await api('GET', '/v1/tables');
    if (all.ok) return { tables: all.body.tables };
    if (all.status !== 403) return { res: all, tables: [] };
    const per = await Promise.all(scopes.table.map((name) => api('GET', `/v1/tables/${esc(name)}`)));
    const failed = per.find((r) => !r.ok);
    return { res: all, scoped: true, tables: per.filter((r) => r.ok).map((r) => r.body), error: failed ? failed.error : '' };
  }

  // ---- Refresh loop ------------------------------------------------------------

  async function refresh() {
    if (state.running) { state.again = true; return; }
    state.running = true;
    clearTimeout(state.timer);
    try {
      const model = await load();
      if (model.down) {
        setAlert('The server did not answer; the panels show what it said last.');
      } else if (model.login) {
        showLogin(model.refused ? `The server refused this token: ${model.error}` : '');
        setUpdated('Sign in to see the server.');
        setAlert('');
      } else {
        showPanels();
        render(model);
        setUpdated(`Updated ${clockTime(new Date())}${state.every ? ` · every ${state.every} s` : ' · paused'}`);
        setAlert('');
      }
    } catch (e) {
      setAlert(`The dashboard failed to draw: ${e.message}`);
      console.error(e);
    } finally {
      state.running = false;
      if (state.again) { state.again = false; refresh(); } else schedule();
    }
  }

  function schedule() {
    clearTimeout(state.timer);
    if (state.every > 0 && !document.hidden) state.timer = setTimeout(refresh, state.every * 1000);
  }

  function setUpdated(text) { $('updated').textContent = text; }
  function setAlert(text) { if ($('alert').textContent !== text) $('alert').textContent = text; }

  function showLogin(message) {
    $('panels').hidden = true;
    $('login').hidden = false;
    $('sign-out').hidden = state.token === '';
    $('login-error').textContent = message;
    state.rendered = {};
    state.samples = [];
    if (message) {
      // A refused token is of no use: forget it, and ask again.
      sessionStorage.removeItem(TOKEN_KEY);
      state.token = '';
      $('login-token').value = '';
      $('login-token').focus();
    } else if (!state.loginShown) {
      $('login-token').focus();
    }
    state.loginShown = true;
  }

  function showPanels() {
    $('login').hidden = true;
    $('panels').hidden = false;
    $('sign-out').hidden = state.token === '';
    state.loginShown = false;
  }

  function render(model) {
    if (model.metrics.ok) addSample(sample(parseMetrics(model.metrics.body)));
    renderIndexes(model);
    renderExpiry(model);
    renderHealth(model);
    renderLists(model);
    renderTables(model);
    renderUsage(model);
  }

  // ---- Indexes -------------------------------------------------------------------

  // shardState names a shard's place in its life: created ahead of now,
  // live (holding data inside retention, the one holding now included), or
  // expired and waiting for the manager to drop it.
  function shardState(sh, nowMs, retentionMs) {
    if (sh.state === 'future') return 'created-ahead';
    if (sh.state === 'past' && isFinite(nowMs) && isFinite(retentionMs) && Date.parse(sh.end) + retentionMs <= nowMs) {
      return 'expired-awaiting-drop';
    }
    return 'live';
  }

  const STATE_WORDS = {
    'created-ahead': 'created ahead',
    live: 'live',
    'expired-awaiting-drop': 'expired · awaiting drop',
  };

  function renderIndexes(model) {
    const key = JSON.stringify([model.indexList.status, model.indexes]);
    replace($('indexes'), key, () => {
      const out = [];
      if (!model.indexList.ok && model.indexList.status !== 403) {
        return h('p', { class: 'error' }, `Could not list the indexes: ${model.indexList.error}`);
      }
      if (model.indexList.status === 403 && model.scopes.index.length === 0) {
        return h('p', { class: 'notice', dataset: { needs: 'scope' } },
          'This token cannot list every index (that needs the admin or *:* scope). Sign out and sign in again naming the token\'s index scopes, such as ',
          code('index:events'), '.');
      }
      if (model.indexes.length === 0) {
        return h('p', { class: 'empty', dataset: { empty: 'indexes' } },
          'No indexes yet — create one with ',
          code('ebb index create events --table-bucket 24h --partition-bucket 1h --retention 168h'), '.');
      }
      for (const x of model.indexes) {
        out.push(x.idx ? indexView(x.idx, x.plan)
          : h('article', { class: 'index', dataset: { index: x.name } },
            h('h3', {}, x.name), h('p', { class: 'error' }, x.error)));
      }
      out.push(legend());
      return out;
    });
  }

  function indexView(idx, plan) {
    const shards = idx.shards || [];
    const last = shards[shards.length - 1];
    const runwayMs = parseDuration(idx.runway_remaining);
    // The server's clock, not the browser's: the end of the last shard less
    // the runway the server computed from its own now.
    const nowMs = last ? Date.parse(last.end) - runwayMs : NaN;
    const bucketMs = parseDuration(idx.table_bucket);
    const retentionMs = parseDuration(idx.retention);
    const configuredMs = idx.runway * bucketMs;
    const drops = new Set(plan && plan.ok ? plan.body.actions.filter((a) => a.op === 'drop').map((a) => a.table) : []);

    const counts = {};
    for (const sh of shards) {
      const st = shardState(sh, nowMs, retentionMs);
      counts[st] = (counts[st] || 0) + 1;
    }
    const countText = Object.keys(STATE_WORDS).filter((k) => counts[k])
      .map((k) => `${counts[k]} ${STATE_WORDS[k]}`).join(', ') || 'none';

    const capacity = idx.capacity
      ? `hot shard provisioned (read ${idx.capacity.hot_read_units}, write ${idx.capacity.hot_write_units})` +
        (idx.capacity.peak_write_units ? `, next pre-warmed (read ${idx.capacity.peak_read_units || 0}, write ${idx.capacity.peak_write_units})` : '')
      : 'on-demand (no capacity policy)';

    const low = isFinite(runwayMs) && isFinite(bucketMs) && runwayMs < bucketMs;
    return h('article', { class: 'index', dataset: { index: idx.name }, 'aria-labelledby': `index-${idx.name}` },
      h('div', { class: 'index-head' },
        h('h3', { id: `index-${idx.name}` }, idx.name),
        h('span', { class: 'config' },
          `table bucket ${idx.table_bucket} · partition ${idx.partition_bucket} · retention ${idx.retention}` +
          (idx.held_retention ? ` (holding ${idx.held_retention} until an apply)` : '') +
          ` · runway ${idx.runway} shard${idx.runway === 1 ? '' : 's'}`)),
      h('dl', { class: 'facts' },
        h('div', {},
          h('dt', {}, 'Runway remaining'),
          h('dd', { class: low ? 'low' : undefined },
            h('span', { dataset: { runway: '' } }, idx.runway_remaining),
            ` · configured ${formatDuration(configuredMs)} beyond the shard holding now`,
            low ? ' — below one shard' : '',
            isFinite(runwayMs) && configuredMs > 0
              ? h('meter', {
                min: 0, max: configuredMs + bucketMs, low: bucketMs, optimum: configuredMs + bucketMs,
                value: Math.max(0, runwayMs), 'aria-label': `runway remaining of ${idx.name}`,
              })
              : null)),
        h('div', {}, h('dt', {}, 'Now (server clock)'), h('dd', { dataset: { now: '' } }, formatTime(nowMs))),
        h('div', {}, h('dt', {}, 'Shards'), h('dd', { dataset: { counts: '' } }, countText)),
        h('div', {}, h('dt', {}, 'Capacity'), h('dd', {}, capacity)),
        idx.archive
          ? h('div', {}, h('dt', {}, 'Archive'), h('dd', { dataset: { archive: '' } },
            `${idx.archive.to}: each shard before its drop; a drop whose archive fails is held, and the plan below says why`))
          : null),
      timeline(idx, shards, nowMs, retentionMs, drops),
      planView(idx, plan));
  }

  function timeline(idx, allShards, nowMs, retentionMs, drops) {
    if (allShards.length === 0) {
      return h('p', { class: 'empty' }, 'No shards: the shard manager creates them on its next pass.');
    }
    const shards = allShards.slice(-MAX_SHARDS);
    let lo = Date.parse(shards[0].start), hi = Date.parse(shards[shards.length - 1].end);
    if (isFinite(nowMs)) { lo = Math.min(lo, nowMs); hi = Math.max(hi, nowMs); }
    const pct = (t) => `${((t - lo) / (hi - lo)) * 100}%`;
    const list = h('ol', { class: 'timeline', 'aria-label': `Shards of ${idx.name}, oldest first` });
    for (const sh of shards) {
      const start = Date.parse(sh.start), end = Date.parse(sh.end);
      const st = shardState(sh, nowMs, retentionMs);
      const hot = sh.state === 'hot';
      const words = STATE_WORDS[st] + (hot ? ' · now' : '');
      const label = `${sh.table}: ${words}${drops.has(sh.table) ? ', drop planned' : ''}, ` +
        `${formatTime(start)} to ${formatTime(end)}, ${capacityWords(sh.capacity)}`;
      const li = h('li', {
        class: 'shard', tabindex: 0, title: label, 'aria-label': label,
        dataset: {
          key: `shard:${sh.table}`, table: sh.table, state: st, hot: String(hot),
          capacity: sh.capacity, dropPlanned: String(drops.has(sh.table)),
        },
      },
      h('span', { class: 'state' }, words),
      h('span', { class: 'when' }, shortTime(start)),
      h('span', { class: 'cap' }, capacityWords(sh.capacity)));
      // CSSOM, which the page's content security policy allows.
      li.style.left = pct(start);
      li.style.width = `calc(${((end - start) / (hi - lo)) * 100}% - 3px)`;
      list.append(li);
    }
    if (isFinite(nowMs)) {
      const marker = h('li', { class: 'now-marker', 'aria-hidden': 'true' }, h('span', {}, `now ${shortTime(nowMs)}`));
      marker.style.left = pct(nowMs);
      list.append(marker);
    }
    return h('div', { class: 'timeline-wrap' },
      allShards.length > shards.length
        ? h('p', { class: 'notice' }, `Showing the last ${shards.length} of ${allShards.length} shards.`) : null,
      list,
      h('div', { class: 'axis', 'aria-hidden': 'true' }, h('span', {}, formatTime(lo)), h('span', {}, formatTime(hi))));
  }

  function legend() {
    return h('ul', { class: 'legend', 'aria-label': 'Legend of shard states' },
      Object.entries(STATE_WORDS).map(([k, words]) => h('li', {},
        h('span', { class: `swatch ${k}`, 'aria-hidden': 'true' }), words)),
      h('li', {}, 'a red line marks now; a thick border the shard holding it'));
  }

  const OP_SIGNS = { create: '+', drop: '-', set_capacity: '~', prewarm: '~' };

  function planView(idx, plan) {
    const wrap = h('div', { class: 'plan', dataset: { plan: idx.name } });
    const head = h('div', { class: 'plan-head' }, h('h4', { class: 'plan-title' }, 'Next plan'));
    wrap.append(head);
    if (!plan || !plan.ok) {
      wrap.append(h('p', { class: 'notice', dataset: { needs: plan && plan.status === 403 ? 'reconcile' : undefined } },
        plan && plan.status === 403
          ? 'A plan is a dry run of POST .../reconcile, which this token may not send (a read-only token reads, and plans need a token that may reconcile the index).'
          : `No plan: ${plan ? plan.error : 'not read'}.`));
      return wrap;
    }
    const actions = plan.body.actions || [];
    if (actions.length === 0) {
      wrap.append(h('p', { class: 'empty', dataset: { planEmpty: '' } }, 'Nothing to do: the shards match the clock.'));
    } else {
      wrap.append(h('ul', {}, actions.map((a) => h('li', { dataset: { op: a.op, table: a.table } },
        h('span', { class: 'op' }, `${OP_SIGNS[a.op] || '?'} ${a.op}`), ' ', code(a.table),
        a.capacity ? ` → ${a.capacity}` : '',
        a.rows !== undefined ? ` (${formatCount(a.rows)} rows, ${formatBytes(a.bytes)})` : '',
        a.deferred ? h('span', { class: 'deferred' }, ' deferred') : '',
        h('span', { class: 'reason' }, ` — ${a.reason}`)))));
    }
    if (plan.body.unrecognized && plan.body.unrecognized.length) {
      wrap.append(h('p', { class: 'notice' }, `Tables with the index's prefix that are not its shards (left alone): ${plan.body.unrecognized.join(', ')}`));
    }
    // Applying is offered only when there is something to apply, and only
    // to a token that may: the dry run above was the same POST route, so
    // its success says the token's scopes reach it (a read-only token's
    // never do).
    const pending = actions.filter((a) => !a.deferred);
    if (pending.length > 0) {
      head.append(h('button', {
        type: 'button', class: 'primary',
        dataset: { adminAction: 'apply', key: `apply:${idx.name}` },
        onclick: (ev) => applyPlan(idx.name, pending, ev.currentTarget),
      }, `Apply plan to ${idx.name}`));
    }
    return wrap;
  }

  async function applyPlan(name, pending, button) {
    const drops = pending.filter((a) => a.op === 'drop');
    if (drops.length > 0 &&
        !window.confirm(`Apply the plan to ${name}? It drops ${drops.length} shard(s): ${drops.map((a) => a.table).join(', ')}. Their rows are gone for good.`)) {
      return;
    }
    button.disabled = true;
    const r = await api('POST', `/v1/indexes/${esc(name)}/reconcile?dry_run=false`);
    if (!r.ok) {
      setAlert(`Applying the plan to ${name} failed: ${r.error}`);
    } else {
      const failed = r.body.actions.filter((a) => a.error);
      setAlert(failed.length ? `Applied the plan to ${name}; ${failed.length} action(s) failed: ${failed.map((a) => `${a.table}: ${a.error}`).join('; ')}` : '');
      setUpdated(`Applied ${r.body.actions.length} action(s) to ${name}.`);
    }
    await refresh();
  }

  // ---- Expiry ----------------------------------------------------------------

  function renderExpiry(model) {
    const container = $('expiry');
    if (!model.metrics.ok) {
      replace(container, `no-metrics:${model.metrics.status}`, () => h('p', { class: 'notice', dataset: { needs: 'metrics' } },
        model.metrics.status === 403 || model.metrics.status === 401
          ? 'The expiry figures come from /metrics, which needs a token with the metrics or admin scope.'
          : `Could not read /metrics: ${model.metrics.error}`));
      return;
    }
    const last = state.samples[state.samples.length - 1];
    const minute = sampleBefore(60 * 1000);
    const half = sampleBefore(30 * 1000);
    const elapsed = (last.at - half.at) / 1000;
    const deletedRate = elapsed > 0 && delta(half, last, 'deleted') !== null ? delta(half, last, 'deleted') / elapsed : null;
    const lagCount = delta(minute, last, 'lagCount');
    const deleteLag = lagCount ? delta(minute, last, 'lagSum') / lagCount : null;
    const sweeper = model.cluster.ok ? model.cluster.body.leases.find((l) => l.role === 'sweeper') : null;

    replace(container, JSON.stringify(state.samples.map((x) => [x.at, x.watermark, x.deleted, x.lagCount])), () => [
      h('dl', { class: 'facts' },
        h('div', {}, h('dt', {}, 'Watermark lag'), h('dd', { dataset: { watermarkLag: '' } }, formatSeconds(last.watermark))),
        h('div', {}, h('dt', {}, 'Delete lag (last minute)'), h('dd', { dataset: { deleteLag: '' } },
          deleteLag === null ? 'no deletes' : formatSeconds(deleteLag))),
        h('div', {}, h('dt', {}, 'Rows deleted / s'), h('dd', { dataset: { deletedRate: '' } },
          deletedRate === null ? 'measuring…' : deletedRate.toFixed(deletedRate < 10 ? 1 : 0))),
        h('div', {}, h('dt', {}, 'Rows deleted'), h('dd', { dataset: { deleted: '' } }, formatCount(last.deleted)))),
      chart(),
      h('ul', { class: 'key' },
        h('li', {}, h('span', { class: 'line', 'aria-hidden': 'true' }), 'watermark lag: oldest expiry window not yet swept'),
        h('li', {}, h('span', { class: 'line delete', 'aria-hidden': 'true' }), 'delete lag: a row\'s expiry to its delete (mean per refresh)')),
      sweeper && sweeper.holder !== model.cluster.body.replica
        ? h('p', { class: 'notice' }, `The sweeper runs on ${sweeper.holder || 'no replica yet'}; these figures are this replica's.`) : null,
    ]);
  }

  // chart draws the lags over the samples kept (up to ten minutes) as an
  // inline SVG; the figures above it are its text alternative.
  function chart() {
    const W = 600, H = 150, L = 44, R = 8, T = 10, B = 22;
    const pts = state.samples;
    const first = pts[0], last = pts[pts.length - 1];
    const span = Math.max(last.at - first.at, 60 * 1000);
    const deleteLags = pts.map((p, i) => {
      if (i === 0) return null;
      const c = delta(pts[i - 1], p, 'lagCount');
      return c ? delta(pts[i - 1], p, 'lagSum') / c : null;
    });
    const values = pts.map((p) => p.watermark).concat(deleteLags).filter((v) => v !== null && isFinite(v));
    const top = niceCeil(Math.max(1, ...values));
    const x = (at) => L + ((at - (last.at - span)) / span) * (W - L - R);
    const y = (v) => T + (1 - v / top) * (H - T - B);
    // A line through the values, and a dot on each, so that a lone value
    // (one refresh with deletes) shows too.
    const line = (vals, cls) => {
      const p = [];
      vals.forEach((v, i) => { if (v !== null && isFinite(v)) p.push([x(pts[i].at).toFixed(1), y(v).toFixed(1)]); });
      if (p.length === 0) return null;
      return [s('polyline', { class: cls, points: p.map((q) => q.join(',')).join(' ') }),
        p.map(([cx, cy]) => s('circle', { class: `${cls} dot`, cx, cy, r: 2.5 }))];
    };
    const minutes = Math.round(span / 60000);
    return s('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': 'chart-title' },
      s('title', { id: 'chart-title' }, `Expiry lag over the last ${minutes} minute(s), in seconds`),
      [0, 0.5, 1].map((f) => [
        s('line', { class: 'grid', x1: L, x2: W - R, y1: y(top * f), y2: y(top * f) }),
        s('text', { x: L - 6, y: y(top * f) + 4, 'text-anchor': 'end' }, `${+(top * f).toFixed(2)} s`),
      ]),
      s('text', { x: L, y: H - 6 }, `−${minutes} min`),
      s('text', { x: W - R, y: H - 6, 'text-anchor': 'end' }, 'now'),
      line(pts.map((p) => p.watermark), 'watermark'),
      line(deleteLags, 'delete'));
  }

  function niceCeil(v) {
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  // ---- Backend and health ------------------------------------------------------

  function badge(ok, words, warn) {
    return h('span', { class: `badge ${ok ? 'ok' : warn ? 'warn' : 'bad'}` }, words);
  }

  function renderHealth(model) {
    const last = state.samples[state.samples.length - 1];
    const windowStart = last ? sampleBefore(ERROR_WINDOW_MS) : null;
    const errors = last ? {
      http5xx: delta(windowStart, last, 'http5xx'),
      sweepErrors: delta(windowStart, last, 'sweepErrors'),
      reconcileFailures: delta(windowStart, last, 'reconcileFailures'),
      shed: delta(windowStart, last, 'shed'),
      since: windowStart.at, build: last.build,
    } : null;
    const key = JSON.stringify([model.healthz.status, model.readyz.body, model.cluster.status, model.cluster.body,
      model.adminTables.status, model.adminTables.body, errors]);
    replace($('health'), key, () => {
      const ready = model.readyz.body && typeof model.readyz.body === 'object' ? model.readyz.body : {};
      const out = [h('dl', { class: 'facts' },
        h('div', {}, h('dt', {}, 'Live'), h('dd', { dataset: { healthz: model.healthz.ok ? 'ok' : 'failing' } },
          badge(model.healthz.ok, model.healthz.ok ? 'ok' : `failing (${model.healthz.error})`))),
        h('div', {}, h('dt', {}, 'Ready'), h('dd', { dataset: { ready: model.readyz.ok ? 'ready' : 'not_ready' } },
          badge(model.readyz.ok, model.readyz.ok ? 'ready' : 'not ready', true),
          !model.readyz.ok && ready.reason ? ` ${ready.reason}` : '')),
        backendFacts(model, errors))];
      if (errors) {
        const mins = Math.max(1, Math.round((Date.now() - errors.since) / 60000));
        const span = mins === 1 ? 'the last minute' : `the last ${mins} minutes`;
        const total = [errors.http5xx, errors.sweepErrors, errors.reconcileFailures].reduce((a, b) => a + (b || 0), 0);
        out.push(h('table', { class: 'data', dataset: { errors: String(total) } },
          h('caption', {}, `Errors in ${span} (as long as this page has watched, up to 5 minutes)`),
          h('thead', {}, h('tr', {}, h('th', {}, 'what'), h('th', { class: 'num' }, 'count'))),
          h('tbody', {},
            errorRow('Server errors (HTTP 5xx)', errors.http5xx),
            errorRow('Failed sweeps', errors.sweepErrors),
            errorRow('Failed reconciles', errors.reconcileFailures),
            errorRow('Requests shed (HTTP 503: over a limit, or the CPU overloaded)', errors.shed))));
      } else {
        out.push(h('p', { class: 'notice' }, 'Error counts come from /metrics, which needs the metrics or admin scope.'));
      }
      if (model.cluster.ok) {
        out.push(h('div', { class: 'scroll' }, h('table', { class: 'data', dataset: { leases: '' } },
          h('caption', {}, `Background roles, as replica ${model.cluster.body.replica} sees them`),
          h('thead', {}, h('tr', {}, ['role', 'holder', 'epoch', 'lease expires', 'held here'].map((t) => h('th', {}, t)))),
          h('tbody', {}, model.cluster.body.leases.map((l) => h('tr', { dataset: { role: l.role } },
            h('td', {}, l.role), h('td', {}, l.holder || 'nobody yet'), h('td', { class: 'num' }, String(l.epoch)),
            h('td', {}, l.expires ? formatTime(Date.parse(l.expires)) : '—'), h('td', {}, l.held_here ? 'yes' : 'no')))))));
      } else {
        out.push(h('p', { class: 'notice', dataset: { needs: 'admin' } },
          `Leases and physical tables need the admin scope${model.cluster.status === 403 ? '' : `: ${model.cluster.error}`}.`));
      }
      if (model.adminTables.ok) {
        const tables = model.adminTables.body.tables;
        out.push(h('details', {},
          h('summary', {}, `Physical tables (${tables.length})`),
          h('div', { class: 'scroll' }, h('table', { class: 'data' },
            h('thead', {}, h('tr', {}, h('th', {}, 'table'), h('th', { class: 'num' }, 'rows'), h('th', { class: 'num' }, 'bytes'), h('th', {}, 'capacity'))),
            h('tbody', {}, tables.map((t) => h('tr', {},
              h('td', {}, code(t.name)), h('td', { class: 'num' }, formatCount(t.rows)),
              h('td', { class: 'num' }, formatBytes(t.bytes)), h('td', {}, capacityWords(t.capacity)))))))));
      }
      return out;
    });
  }

  function backendFacts(model, errors) {
    const c = model.cluster.ok ? model.cluster.body : {};
    const build = errors && errors.build;
    const backend = c.backend || (build && build.backend);
    const out = [];
    if (backend) out.push(h('div', {}, h('dt', {}, 'Backend'), h('dd', { dataset: { backend } }, backend)));
    if (build && build.version) out.push(h('div', {}, h('dt', {}, 'Version'), h('dd', {}, build.version)));
    if (c.capabilities) {
      const caps = c.capabilities;
      const words = [];
      if (caps.native_ttl) words.push('native TTL');
      if (caps.atomic_partition_batch) {
        words.push(caps.max_atomic_batch > 0 && caps.max_atomic_batch < 1e6
          ? `atomic batches of up to ${caps.max_atomic_batch}` : 'atomic batches of any size');
      }
      if (caps.warm_throughput) words.push('warm throughput');
      if (caps.shared_across_processes) words.push('shared by replicas');
      if (caps.drop_keeps_snapshot) words.push('drops keep a snapshot');
      out.push(h('div', {}, h('dt', {}, 'Capabilities'), h('dd', { dataset: { capabilities: '' } }, words.join(', ') || 'none')));
    }
    return out;
  }

  function errorRow(what, n) {
    return h('tr', {}, h('td', {}, what), h('td', { class: 'num' }, n === null ? '—' : formatCount(n)));
  }

  // ---- Lists -------------------------------------------------------------------

  function rowsByTable(model) {
    const out = new Map();
    if (model.adminTables.ok) for (const t of model.adminTables.body.tables) out.set(t.name, t.rows);
    return out;
  }

  function renderLists(model) {
    const f = model.features;
    const rows = rowsByTable(model);
    const key = JSON.stringify([f, [...rows]]);
    replace($('lists'), key, () => {
      if (!f.res.ok && !f.scoped) return h('p', { class: 'error' }, `Could not list the list features: ${f.res.error}`);
      if (f.scoped && model.scopes.list.length === 0) {
        return h('p', { class: 'notice', dataset: { needs: 'scope' } },
          'This token cannot list every list feature (that needs the admin or *:* scope); sign in again naming its list scopes, such as ', code('list:user'), '.');
      }
      if (f.features.length === 0) {
        return [f.error ? h('p', { class: 'error' }, f.error) : null,
          h('p', { class: 'empty', dataset: { empty: 'lists' } }, 'No list features yet — create one with ',
            code('ebb lists create-feature user stories_presented _ --ttl 720h'), '.')];
      }
      const counted = f.features.some((x) => x.table && rows.has(x.table));
      return h('div', { class: 'scroll' }, h('table', { class: 'data' },
        h('caption', {}, counted
          ? 'Rows stored per version (expired rows not yet deleted included)'
          : 'Row counts need the admin scope'),
        h('thead', {}, h('tr', {}, h('th', {}, 'entity type'), h('th', {}, 'feature'), h('th', {}, 'version'),
          h('th', {}, 'TTL'), h('th', {}, 'expiry'), h('th', { class: 'num' }, 'rows'))),
        h('tbody', {}, f.features.map((x) => {
          const n = x.table && rows.has(x.table) ? rows.get(x.table) : null;
          return h('tr', { dataset: { feature: `${x.entity_type}/${x.feature}/${x.version}` } },
            h('td', {}, x.entity_type), h('td', {}, x.feature), h('td', {}, x.version === '' ? '(default)' : x.version),
            h('td', {}, x.ttl), h('td', { dataset: { expiry: x.expiry || '' } }, x.expiry || ''),
            h('td', { class: 'num', dataset: { rows: n === null ? '' : String(n) } }, formatCount(n)));
        }))));
    });
  }

  // ---- Shared tables -------------------------------------------------------------

  function renderTables(model) {
    const t = model.tables;
    replace($('tables'), JSON.stringify(t), () => {
      if (t.res && !t.res.ok && !t.scoped) return h('p', { class: 'error' }, `Could not list the shared tables: ${t.res.error}`);
      if (t.scoped && model.scopes.table.length === 0) {
        return h('p', { class: 'notice', dataset: { needs: 'scope' } },
          'This token cannot list every shared table (that needs the admin or *:* scope); sign in again naming its table scopes, such as ', code('table:orders'), '.');
      }
      if (t.tables.length === 0) {
        return [t.error ? h('p', { class: 'error' }, t.error) : null,
          h('p', { class: 'empty', dataset: { empty: 'tables' } }, 'No shared tables yet — create one with ',
            code('ebb tables create orders --default-ttl 720h'), '.')];
      }
      return h('div', { class: 'scroll' }, h('table', { class: 'data' },
        h('caption', {}, t.counted ? 'Live items per logical table' : 'Item counts need the admin scope'),
        h('thead', {}, h('tr', {}, h('th', {}, 'table'), h('th', {}, 'default TTL'), h('th', {}, 'expiry'),
          h('th', { class: 'num' }, 'items'), h('th', { class: 'num' }, 'bytes'))),
        h('tbody', {}, t.tables.map((x) => h('tr', { dataset: { tableName: x.name } },
          h('td', {}, x.name), h('td', {}, x.default_ttl === '0s' ? 'never expires' : x.default_ttl),
          h('td', { dataset: { expiry: x.expiry || '' } }, x.expiry || ''),
          h('td', { class: 'num', dataset: { items: x.items === undefined ? '' : String(x.items) } }, formatCount(x.items)),
          h('td', { class: 'num' }, formatBytes(x.bytes)))))));
    });
  }

  // ---- Usage ---------------------------------------------------------------------

  // renderUsage shows the request units the server metered (GET
  // /v1/admin/usage), per table class and provider model, with the rate
  // over the server's projection window (its `recent` usage: the last ten
  // minutes or more, or since the start when shorter) projected over 30
  // days. A server without the route shows no panel at all.
  function renderUsage(model) {
    const u = model.usage;
    const panel = $('usage-panel');
    const noRoute = u.status === 404 && /no such route/.test(u.error) || u.status === 405;
    panel.hidden = noRoute;
    if (noRoute) return;
    const sum = (usage) => {
      const out = {};
      for (const op of (usage && usage.operations) || []) {
        for (const [model, units] of Object.entries(op.units || {})) {
          for (const [unit, n] of Object.entries(units)) {
            const k = `${op.class}\u0000${model}\u0000${unit}`;
            out[k] = (out[k] || 0) + n;
          }
        }
      }
      return out;
    };
    const totals = u.ok ? sum(u.body) : {};
    // A server older than the projection window reports none: its rate
    // since the start stands in.
    const recent = u.ok ? (u.body.recent || u.body) : null;
    const recentTotals = recent ? sum(recent) : {};
    const secs = recent ? (Date.parse(recent.at) - Date.parse(recent.since)) / 1000 : 0;
    replace($('usage'), JSON.stringify([u.status, u.error, totals, recentTotals, secs, u.ok && u.body.cost]), () => {
      if (u.status === 401 || u.status === 403) {
        return h('p', { class: 'notice', dataset: { needs: 'admin' } }, 'Usage needs the admin scope.');
      }
      if (!u.ok) return h('p', { class: 'notice' }, `No usage: ${u.error}`);
      const keys = Object.keys(totals).sort();
      if (keys.length === 0) {
        return h('p', { class: 'empty', dataset: { empty: 'usage' } }, 'Nothing metered yet: no store operation has run since the server started.');
      }
      // One row per table class and provider model, one column per unit.
      const units = [...new Set(keys.map((k) => k.split('\u0000')[2]))].sort();
      const rows = [...new Set(keys.map((k) => k.split('\u0000').slice(0, 2).join('\u0000')))];
      const rate = (k) => (secs > 0 ? Math.max(0, recentTotals[k] || 0) / secs : null);
      return h('div', { class: 'scroll' }, h('table', { class: 'data' },
        h('caption', {}, `Request units metered since ${formatTime(Date.parse(u.body.since))}; `,
          `each figure is the total so far, then the rate since ${formatTime(Date.parse(recent.since))} `,
          '(the last ten minutes or more, or since the start) projected over 30 days'),
        h('thead', {}, h('tr', {}, h('th', {}, 'class'), h('th', {}, 'model'),
          units.map((unit) => h('th', { class: 'num' }, `${unit.replace(/_/g, ' ')} units`)))),
        h('tbody', {}, rows.map((row) => {
          const [cls, mdl] = row.split('\u0000');
          return h('tr', { dataset: { usage: `${cls}/${mdl}` } },
            h('td', {}, cls), h('td', {}, mdl),
            units.map((unit) => {
              const k = `${row}\u0000${unit}`;
              const r = rate(k);
              return h('td', { class: 'num', dataset: { unit, units: String(totals[k] || 0) } },
                formatCount(totals[k] || 0), h('br'),
                h('span', { class: 'reason' }, r === null ? 'measuring…' : `${compact.format(r * 30 * 86400)} / 30 d`));
            }));
        })),
      ), costTable(u.body.cost));
    });
  }

  // costTable shows the server's projection of its metered rate onto a
  // month of each provider's on-demand prices (GET
  // /v1/admin/usage?cost=true), beside what native TTL would cost.
  function costTable(c) {
    const help = h('p', { class: 'help' }, 'Prices differ by provider and region: ', code('ebb cost --from URL --prices FILE'),
      ' projects these units on other prices.');
    if (!c || !(c.projections || []).length) return h('div', {}, h('p', { class: 'empty' }, 'No cost yet: the usage covers no time.'), help);
    const money = new Intl.NumberFormat('en-US', { style: 'currency', currency: c.currency || 'USD', maximumFractionDigits: 2 });
    const names = { dynamodb: 'DynamoDB on demand', keyspaces: 'Amazon Keyspaces on demand' };
    return h('div', { class: 'scroll' }, h('table', { class: 'data' },
      h('caption', {}, `A month at the rate metered since ${formatTime(Date.parse(c.since))}, on ${c.region} prices checked ${c.prices_checked}`,
        c.storage_known ? '' : ' (storage not measured)'),
      h('thead', {}, h('tr', {}, h('th', {}, 'provider'), ['writes', 'reads', 'of which expiry', 'storage', 'total', 'with native TTL', 'saved']
        .map((x) => h('th', { class: 'num' }, x)))),
      h('tbody', {}, c.projections.map((p) => h('tr', { dataset: { cost: p.provider, total: String(p.total) } },
        h('td', {}, names[p.provider] || p.provider),
        [p.writes, p.reads, p.expiry, p.storage, p.total, p.native_ttl, p.saved].map((v) => h('td', { class: 'num' }, money.format(v))))))),
    help);
  }

  // ---- Start -----------------------------------------------------------------------

  function start() {
    const param = new URLSearchParams(location.search).get('refresh');
    const select = $('refresh-every');
    if (param !== null && /^\d+$/.test(param) && +param <= 300) {
      state.every = +param;
      if (![...select.options].some((o) => o.value === param)) {
        select.append(h('option', { value: param }, +param === 0 ? 'paused' : `every ${param} s`));
      }
      select.value = param;
    } else {
      state.every = +select.value;
    }
    select.addEventListener('change', () => { state.every = +select.value; schedule(); });
    $('refresh-now').addEventListener('click', () => refresh());
    $('sign-out').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      sessionStorage.removeItem(SCOPES_KEY);
      state.token = '';
      state.scopes = '';
      state.samples = [];
      state.rendered = {};
      $('login-form').reset();
      refresh();
    });
    $('login-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      state.token = $('login-token').value.trim();
      state.scopes = $('login-scopes').value.trim();
      sessionStorage.setItem(TOKEN_KEY, state.token);
      sessionStorage.setItem(SCOPES_KEY, state.scopes);
      state.samples = [];
      state.rendered = {};
      $('login-error').textContent = '';
      refresh();
    });
    document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(); else clearTimeout(state.timer); });
    refresh();
  }

  start();
})();
