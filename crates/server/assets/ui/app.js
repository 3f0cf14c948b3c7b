// The mcp-tasks dashboard: plain JavaScript, no framework, no external resource.
// The bearer token is typed into the sign-in form (or given as `/ui#token=...`: a
// fragment never reaches the server) and kept in this tab's sessionStorage only.
'use strict';

(function () {
  const KEY = 'mcp-tasks-token';
  const TERMINAL = ['completed', 'failed', 'cancelled'];
  const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
  // How often the list is refreshed; a selected running task is followed at its own
  // pollInterval when that is shorter.
  const LIST_EVERY_MS = 1000;
  const MIN_EVERY_MS = 250;
  const $ = (id) => document.getElementById(id);

  let token = null;
  let selected = null;
  let selectedPoll = null;
  let timer = null;
  let generation = 0;

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  function time(s) {
    if (!s) return '';
    const d = new Date(s);
    return isNaN(d) ? s : d.toLocaleString();
  }

  async function api(path, method) {
    const headers = { Accept: 'application/json' };
    if (token) headers.Authorization = 'Bearer ' + token;
    const r = await fetch('/ui/api/' + path, { method: method || 'GET', headers, cache: 'no-store' });
    let body = null;
    try { body = await r.json(); } catch (_) { body = null; }
    return { status: r.status, body };
  }

  function errorText(r) {
    return (r.body && r.body.error && r.body.error.message) || ('HTTP ' + r.status);
  }

  function showSignin(message) {
    $('app').hidden = true;
    $('signout').hidden = true;
    $('who').textContent = '';
    $('signin').hidden = false;
    $('signin-error').textContent = message || '';
    $('token').focus();
  }

  function schedule(ms) {
    clearTimeout(timer);
    timer = setTimeout(refresh, ms);
  }

  function nextDelay() {
    let ms = LIST_EVERY_MS;
    if (selectedPoll) ms = Math.min(ms, selectedPoll);
    return Math.max(MIN_EVERY_MS, ms);
  }

  async function refresh() {
    clearTimeout(timer);
    const mine = ++generation;
    const q = new URLSearchParams();
    if ($('f-status').value) q.set('status', $('f-status').value);
    if ($('f-tool').value) q.set('tool', $('f-tool').value);
    let r;
    try {
      r = await api('tasks?' + q.toString());
    } catch (e) {
      $('live').textContent = 'server unreachable, retrying…';
      schedule(2000);
      return;
    }
    if (mine !== generation) return;
    if (r.status === 401) {
      if (token) sessionStorage.removeItem(KEY);
      const had = token;
      token = null;
      showSignin(had ? 'The token was refused.' : '');
      return;
    }
    if (r.status !== 200) {
      $('live').textContent = 'error: ' + errorText(r);
      schedule(2000);
      return;
    }
    renderList(r.body);
    if (selected) await loadDetail(selected);
    $('live').textContent = 'live · updated ' + new Date().toLocaleTimeString();
    schedule(nextDelay());
  }

  function renderList(page) {
    $('signin').hidden = true;
    $('app').hidden = false;
    $('signout').hidden = !token;
    $('who').textContent = page.principal
      ? 'Signed in as ' + page.principal + (page.seesAll ? ' (administrator: every task)' : '')
      : 'No authentication (loopback): every task of this server';
    $('app').classList.toggle('owners', !!page.showsOwners);

    const counts = $('counts');
    counts.replaceChildren();
    for (const s of STATUSES) {
      const c = el('button', { type: 'button', class: 'count', 'data-status': s });
      c.append(el('b', {}, page.counts[s] || 0), el('span', { class: 'status ' + s }, s));
      c.addEventListener('click', () => { $('f-status').value = s; refresh(); });
      counts.append(c);
    }

    const tool = $('f-tool');
    const want = tool.value;
    const tools = new Set(page.tools);
    if (want) tools.add(want);
    tool.replaceChildren(el('option', { value: '' }, 'all'));
    for (const t of [...tools].sort()) tool.append(el('option', { value: t }, t));
    tool.value = want;

    const body = $('tasks').tBodies[0];
    body.replaceChildren();
    for (const t of page.tasks) {
      const tr = el('tr', { 'data-task-id': t.taskId });
      if (t.taskId === selected) tr.classList.add('selected');
      tr.append(
        el('td', { class: 'id', title: t.taskId }, t.taskId),
        el('td', {}, t.tool || t.method),
        el('td', {}, '').appendChild(el('span', { class: 'status ' + t.status }, t.status)).parentNode,
        el('td', { class: 'msg', title: t.statusMessage || '' }, t.statusMessage || ''),
        el('td', { title: t.lastUpdatedAt }, time(t.lastUpdatedAt)),
        el('td', { class: 'owner-col' }, t.owner || ''),
      );
      tr.addEventListener('click', () => select(t.taskId));
      body.append(tr);
    }
    $('empty').hidden = page.tasks.length > 0;
    const more = page.matching - page.tasks.length;
    $('more').hidden = more <= 0 && !page.truncated;
    $('more').textContent = (more > 0 ? more + ' older matching tasks not shown. ' : '') +
      (page.truncated ? 'The store holds more tasks than one refresh reads; counts cover the oldest.' : '');
  }

  function select(id) {
    selected = id;
    selectedPoll = null;
    for (const tr of $('tasks').tBodies[0].rows) {
      tr.classList.toggle('selected', tr.dataset.taskId === id);
    }
    $('d-error').textContent = '';
    loadDetail(id);
  }

  function closeDetail() {
    selected = null;
    selectedPoll = null;
    $('detail').hidden = true;
    for (const tr of $('tasks').tBodies[0].rows) tr.classList.remove('selected');
  }

  async function loadDetail(id) {
    let r;
    try { r = await api('tasks/' + encodeURIComponent(id)); } catch (_) { return; }
    if (id !== selected) return;
    if (r.status !== 200) {
      $('d-error').textContent = errorText(r);
      selectedPoll = null;
      return;
    }
    renderDetail(r.body);
  }

  function renderDetail(d) {
    const t = d.task;
    $('detail').hidden = false;
    $('d-id').textContent = t.taskId;
    const st = $('d-status');
    st.textContent = t.status;
    st.className = 'status ' + t.status;
    const running = !TERMINAL.includes(t.status);
    $('d-cancel').hidden = !running;
    selectedPoll = running && t.pollInterval ? t.pollInterval : null;
    $('d-message').textContent = t.statusMessage || '';
    const fields = $('d-fields');
    fields.replaceChildren();
    const add = (k, v) => { if (v !== undefined && v !== null && v !== '') fields.append(el('dt', {}, k), el('dd', {}, v)); };
    add('Method', t.method);
    add('Tool', t.tool);
    add('Owner', t.owner);
    add('Created', time(t.createdAt));
    add('Last updated', time(t.lastUpdatedAt));
    add('TTL', t.ttl === null ? 'unlimited' : t.ttl + ' ms');
    add('Poll interval', t.pollInterval ? t.pollInterval + ' ms' : '');
    const args = d.request && typeof d.request === 'object' && 'arguments' in d.request ? d.request.arguments : d.request;
    $('d-request').textContent = JSON.stringify(args, null, 2);
    const hist = $('d-history').tBodies[0];
    hist.replaceChildren();
    for (const h of d.history) {
      const tr = el('tr');
      tr.append(el('td', { title: h.at }, time(h.at)),
        el('td', {}, '').appendChild(el('span', { class: 'status ' + h.status }, h.status)).parentNode,
        el('td', {}, h.statusMessage || ''));
      hist.append(tr);
    }
    if (d.error) {
      $('d-outcome-title').textContent = 'Error';
      $('d-outcome').textContent = JSON.stringify(d.error, null, 2);
    } else if (d.result) {
      $('d-outcome-title').textContent = 'Result';
      $('d-outcome').textContent = JSON.stringify(d.result, null, 2);
    } else {
      $('d-outcome-title').textContent = 'Result';
      $('d-outcome').textContent = 'not yet: the task is ' + t.status;
    }
  }

  async function cancelSelected() {
    if (!selected) return;
    const id = selected;
    $('d-cancel').disabled = true;
    try {
      const r = await api('tasks/' + encodeURIComponent(id) + '/cancel', 'POST');
      if (r.status !== 200) $('d-error').textContent = errorText(r);
    } catch (e) {
      $('d-error').textContent = String(e);
    } finally {
      $('d-cancel').disabled = false;
    }
    refresh();
  }

  function init() {
    const m = /^#token=(.+)$/.exec(location.hash);
    if (m) {
      sessionStorage.setItem(KEY, decodeURIComponent(m[1]));
      history.replaceState(null, '', location.pathname + location.search);
    }
    token = sessionStorage.getItem(KEY);
    $('signin-form').addEventListener('submit', (e) => {
      e.preventDefault();
      token = $('token').value.trim();
      $('token').value = '';
      if (!token) return;
      sessionStorage.setItem(KEY, token);
      refresh();
    });
    $('signout').addEventListener('click', () => {
      sessionStorage.removeItem(KEY);
      token = null;
      closeDetail();
      $('tasks').tBodies[0].replaceChildren();
      showSignin('');
      clearTimeout(timer);
    });
    $('f-status').addEventListener('change', refresh);
    $('f-tool').addEventListener('change', refresh);
    $('d-cancel').addEventListener('click', cancelSelected);
    $('d-close').addEventListener('click', closeDetail);
    refresh();
  }

  init();
})();
