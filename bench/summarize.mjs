// Summarize a bench/compare.sh results directory: medians per figure for both servers,
// ratios, the targets of issue #7; printed, and written into docs/performance.md between
// the `results` markers (the rest of that file is kept as it is).
//
//   node bench/summarize.mjs bench/results/<stamp> [COMMAND] [LIST_BIG] [RSS_REQUESTS]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execSync } from 'node:child_process';

const [outDir, command = 'bench/compare.sh', listBigArg = '1000000', rssArg = '20000'] = process.argv.slice(2);
if (!outDir) {
    console.error('usage: node bench/summarize.mjs RESULTS_DIR [COMMAND] [LIST_BIG] [RSS_REQUESTS]');
    process.exit(2);
}
const listBig = Number(listBigArg);
const rssRequests = Number(rssArg);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

const runs = { ours: {}, ts: {} };
const unreadable = [];
for (const f of fs.readdirSync(outDir).sort()) {
    const m = f.match(/^run(\d+)-(ours|ts)-(.+)\.json$/);
    if (!m) continue;
    let r = null;
    try {
        r = JSON.parse(fs.readFileSync(path.join(outDir, f), 'utf8'));
    } catch {
        unreadable.push(f);
        continue;
    }
    (runs[m[2]][m[3]] ??= []).push(r);
}
let createBig = null;
try {
    createBig = JSON.parse(fs.readFileSync(path.join(outDir, 'once-ours-create-big.json'), 'utf8'));
} catch {
    /* not run */
}

const median = xs => {
    const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
    if (!s.length) return NaN;
    const m = s.length >> 1;
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const fig = (server, scen, get) => median((runs[server][scen] ?? []).map(r => { try { return get(r); } catch { return NaN; } }));
const flagged = (server, scen) => (runs[server][scen] ?? []).filter(r => r.cpu?.load_generator_bound).length;
const errors = (server, scen) => (runs[server][scen] ?? []).reduce((n, r) => n + (r.errors?.total ?? 0), 0);
const nruns = (server, scen) => (runs[server][scen] ?? []).length;

const fmt = (x, digits) => {
    if (!Number.isFinite(x)) return '—';
    if (digits === undefined) digits = Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
    return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
};
const op = name => r => r.ops[name];
const big = fmt(listBig, 0);

// Each row: label, scenario, getter, whether higher is better.
const rows = [
    ['create: task creations/s (16 clients)', 'create', r => op('tools/call')(r).per_s, true],
    ['create: p50 / p99 latency, ms', 'create', r => [op('tools/call')(r).p50_ms, op('tools/call')(r).p99_ms], false],
    ['get: tasks/get per s (16 clients, K = 1,000)', 'get', r => op('tasks/get')(r).per_s, true],
    ['get: p50 / p99 latency, ms', 'get', r => [op('tasks/get')(r).p50_ms, op('tasks/get')(r).p99_ms], false],
    ['lifecycle: lifecycles/s (64 clients, 100 ms work, 50 ms polls)', 'lifecycle', r => op('lifecycle')(r).per_s, true],
    ['lifecycle: p50 / p99, ms', 'lifecycle', r => [op('lifecycle')(r).p50_ms, op('lifecycle')(r).p99_ms], false],
    ['lifecycle honouring pollInterval: lifecycles/s (64 clients)', 'lifecycle-poll-interval', r => op('lifecycle')(r).per_s, true],
    ['lifecycle honouring pollInterval: p50 / p99, ms', 'lifecycle-poll-interval', r => [op('lifecycle')(r).p50_ms, op('lifecycle')(r).p99_ms], false],
    ['result-wait: lateness p50 / p99, ms (16 clients, 100 ms work)', 'result-wait', r => [op('result-lateness')(r).p50_ms, op('result-lateness')(r).p99_ms], false],
    ['list: page p50 / p99, ms, 1,000 tasks stored', 'list-1k', r => [op('tasks/list')(r).p50_ms, op('tasks/list')(r).p99_ms], false],
    ['list: page p50 / p99, ms, 10,000 tasks stored', 'list-10k', r => [op('tasks/list')(r).p50_ms, op('tasks/list')(r).p99_ms], false],
    [`list: page p50 / p99, ms, ${big} tasks stored`, 'list-big', r => [op('tasks/list')(r).p50_ms, op('tasks/list')(r).p99_ms], false],
    ['list: tasks per page', 'list-1k', r => r.tasks_per_page, true],
    [`peak RSS after ${fmt(rssRequests, 0)} task creations, MiB`, 'rss', r => r.server_memory.peak_rss_kib / 1024, false],
    ['server CPU per task creation, µs', 'create', r => (r.cpu.server_s * 1e6) / op('tools/call')(r).count, false],
    ['server CPU per tasks/get, µs', 'get', r => (r.cpu.server_s * 1e6) / op('tasks/get')(r).count, false],
];

const pair = (server, scen, get) => {
    const first = fig(server, scen, r => { const v = get(r); return Array.isArray(v) ? v[0] : v; });
    const second = fig(server, scen, r => { const v = get(r); return Array.isArray(v) ? v[1] : NaN; });
    return [first, second];
};
const mark = (server, scen, higher) => {
    const notes = [];
    const f = flagged(server, scen);
    // Only a throughput can be the load generator's limit; waits and latencies of idle
    // servers are not (there both processes use little CPU and the flag means nothing).
    if (f && higher) notes.push(`LG-bound in ${f}/${nruns(server, scen)}`);
    const e = errors(server, scen);
    if (e) notes.push(`${e} errors`);
    return notes.length ? ` (${notes.join(', ')})` : '';
};

const table = [];
table.push('| figure (median of runs) | ours | TypeScript SDK 1.32.2 | ours vs TS |');
table.push('|---|---:|---:|---:|');
const value = {};
for (const [label, scen, get, higher] of rows) {
    const o = pair('ours', scen, get);
    const t = pair('ts', scen, get);
    value[label] = { ours: o, ts: t };
    const show = v => (Number.isFinite(v[1]) ? `${fmt(v[0])} / ${fmt(v[1])}` : fmt(v[0]));
    let ratio = '—';
    if (Number.isFinite(o[0]) && Number.isFinite(t[0]) && o[0] > 0 && t[0] > 0) {
        const r = higher ? o[0] / t[0] : t[0] / o[0];
        ratio = `${fmt(r, r >= 10 ? 0 : 1)}x ${higher ? 'more' : 'less'}`;
    }
    table.push(`| ${label} | ${show(o)}${mark('ours', scen, higher)} | ${show(t)}${mark('ts', scen, higher)} | ${ratio} |`);
}

// Targets (issue #7).
const v = label => value[label];
const targets = [];
const target = (what, ok, result) => targets.push(`| ${what} | ${result} | ${ok === null ? 'not measured' : ok ? 'met' : '**missed**'} |`);
{
    const c = v(rows[0][0]);
    const r = c.ours[0] / c.ts[0];
    target('create at 16 clients ≥ 10x the TS SDK', Number.isFinite(r) ? r >= 10 : null, `${fmt(r, 1)}x (${fmt(c.ours[0], 0)} vs ${fmt(c.ts[0], 0)}/s)`);
    const g = v(rows[2][0]);
    const rg = g.ours[0] / g.ts[0];
    target('get at 16 clients ≥ 10x the TS SDK', Number.isFinite(rg) ? rg >= 10 : null, `${fmt(rg, 1)}x (${fmt(g.ours[0], 0)} vs ${fmt(g.ts[0], 0)}/s)`);
    const l = v(rows[4][0]);
    const lp = v(rows[5][0]);
    const rl = l.ours[0] / l.ts[0];
    target('lifecycle at 64 clients: p99 < 200 ms', Number.isFinite(lp.ours[1]) ? lp.ours[1] < 200 : null, `p99 ${fmt(lp.ours[1])} ms (TS ${fmt(lp.ts[1])} ms)`);
    target('lifecycle at 64 clients: ≥ 2x the TS throughput', Number.isFinite(rl) ? rl >= 2 : null, `${fmt(rl, 2)}x (${fmt(l.ours[0])} vs ${fmt(l.ts[0])}/s)`);
    const w = v(rows[8][0]);
    target('result-wait at 16 clients: p50 ≤ 3 ms', Number.isFinite(w.ours[0]) ? w.ours[0] <= 3 : null, `${fmt(w.ours[0])} ms (TS ${fmt(w.ts[0])} ms)`);
    target('result-wait at 16 clients: p99 ≤ 10 ms', Number.isFinite(w.ours[1]) ? w.ours[1] <= 10 : null, `${fmt(w.ours[1])} ms (TS ${fmt(w.ts[1])} ms)`);
    const k1 = v(rows[9][0]).ours;
    const kb = v(rows[11][0]).ours;
    const flat = Number.isFinite(kb[0]) && Number.isFinite(k1[0]) ? kb[0] < 2 && kb[0] <= Math.max(1.5 * k1[0], k1[0] + 0.25) : null;
    target(`list: a page at ${big} tasks costs what it costs at 1,000 (< 2 ms)`, flat, `p50 ${fmt(kb[0])} ms at ${big} vs ${fmt(k1[0])} ms at 1,000 (p99 ${fmt(kb[1])} vs ${fmt(k1[1])})`);
    const m = v(rows[13][0]);
    const rm = m.ts[0] / m.ours[0];
    target('peak RSS for the same requests ≤ 1/4 of the TS server\'s', Number.isFinite(rm) ? rm >= 4 : null, `${fmt(m.ours[0], 1)} vs ${fmt(m.ts[0], 1)} MiB (1/${fmt(rm, 1)})`);
}

const cpuModel = (() => {
    try {
        return fs.readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)[1].trim();
    } catch {
        return os.arch();
    }
})();
const rev = (() => {
    if (process.env.BENCH_REV) return process.env.BENCH_REV;
    try {
        return execSync('git rev-parse --short HEAD', { cwd: root }).toString().trim();
    } catch {
        return 'unknown';
    }
})();
const readText = f => {
    try {
        return fs.readFileSync(path.join(outDir, f), 'utf8').trim().replace(/^== load: /, '');
    } catch {
        return '?';
    }
};
const rel = path.relative(root, path.resolve(outDir));

const lines = [];
lines.push('<!-- results:begin (written by bench/summarize.mjs; edit outside the markers) -->');
lines.push('## Results');
lines.push('');
lines.push(`Measured with \`${command}\` on ${new Date().toISOString().slice(0, 10)} at commit \`${rev}\`:`);
lines.push(`${cpuModel}, ${os.cpus().length} cores, ${fmt(os.totalmem() / 2 ** 30, 0)} GiB; node ${process.version}.`);
lines.push('Server under test on CPU 0, load generator on CPU 1; each figure is the median of the runs');
lines.push(`(${Math.max(...Object.values(runs.ours).map(x => x.length), 0)} per scenario), each on a freshly started server, the two servers in turn.`);
lines.push(`Our server: release build, default store (SQLite, \`synchronous=FULL\`) in a temporary directory, default`);
lines.push('settings (info logs to a file), one bearer token (tasks/list needs an identified requester).');
lines.push('The TypeScript server: `bench/ts-server/server.mjs` (SDK 1.32.2 from the committed lock file).');
lines.push(`Load average before: \`${readText('load-before.txt')}\`; after: \`${readText('load-after.txt')}\`.`);
lines.push(`Raw JSON of every run: \`${rel}/\`.`);
lines.push('');
lines.push(...table);
lines.push('');
lines.push('"LG-bound" (throughputs only): the load generator used more than half the server\'s CPU in that many');
lines.push('runs, so the figure may be the generator\'s limit. Errors of any kind are shown the same way (none means none).');
lines.push('The TS SDK lists 10 tasks per page, ours 100.');
if (createBig) {
    const c = createBig.ops?.['tools/call'];
    lines.push(`Creating the ${big} tasks for the last list row (32 clients, growing store): ${fmt(c?.per_s, 0)}/s, p99 ${fmt(c?.p99_ms)} ms, ${createBig.errors?.total ?? '?'} errors; server peak RSS ${fmt((createBig.server_memory?.peak_rss_kib ?? NaN) / 1024, 1)} MiB.`);
}
if (unreadable.length) lines.push(`Unreadable result files (runs that failed): ${unreadable.join(', ')}.`);
lines.push('');
lines.push('### Targets (issue #7)');
lines.push('');
lines.push('| target | result | |');
lines.push('|---|---|---|');
lines.push(...targets);
lines.push('<!-- results:end -->');
const section = lines.join('\n');

console.log('\n' + section + '\n');

const doc = path.join(root, 'docs', 'performance.md');
let text = '';
try {
    text = fs.readFileSync(doc, 'utf8');
} catch {
    text = '# Performance\n\n<!-- results:begin -->\n<!-- results:end -->\n';
}
const begin = text.indexOf('<!-- results:begin');
const endMarker = '<!-- results:end -->';
const end = text.indexOf(endMarker);
if (begin >= 0 && end > begin) {
    text = text.slice(0, begin) + section + text.slice(end + endMarker.length);
} else {
    text = text.trimEnd() + '\n\n' + section + '\n';
}
fs.writeFileSync(doc, text);
console.log(`written: ${path.relative(root, doc)}`);
