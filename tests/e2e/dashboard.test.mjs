// The fleet dashboard at the HTTP level, with the real agent: reasonix_dashboard starts it (and
// reuses it), nothing is served without the password, a foreign Host or Origin is refused, failed
// logins are rate-limited, a non-loopback bind is refused; after logging in it lists every
// orchestrator's agents with their timeline, steers and stops one — and looking at an agent never
// takes a host's result: a watch still gets it. The first server to reach agentd starts it by
// itself, later ones reuse it, it ends with the fleet, and REASONIX_MCP_DASHBOARD_AUTOSTART=0 opts out.
// needs: agent python3 clients
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { useFixture, tool, callTool, BIN, alive, until, shutdownAgentd, sandboxProcesses } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'quick', last_role: 'user', user_contains: 'QUICK-TASK', text: 'quick answer' },
    { name: 'hold', last_role: 'user', user_contains: 'HOLD-TASK', text: 'held answer', delay_first: 3 },
    { name: 'steered', last_role: 'user', user_contains: 'DASH-STEER', text: 'steered answer' },
  ],
};
const PORT = 21000 + (process.pid % 4000);
const fx = useFixture({ scenario });
const env = () => fx.env({ REASONIX_MCP_DASHBOARD_PORT: String(PORT) });
const URL0 = `http://127.0.0.1:${PORT}`;
let dashboardPid;
after(() => { if (dashboardPid) try { process.kill(dashboardPid, 'SIGTERM'); } catch { /* gone */ } });

// fetch with our Origin (as the page's own requests carry it) unless headers say otherwise.
const req = (path, opts = {}) => fetch(URL0 + path, { redirect: 'manual', ...opts, headers: { Origin: URL0, ...(opts.headers || {}) } });

test('reasonix_dashboard starts it, then reuses it; nothing without the password; Host, Origin and bind checked', async () => {
  const { client } = await fx.connect({ name: 'dash-host', env: env() });
  const d = await tool(client, 'reasonix_dashboard', {});
  dashboardPid = d.pid;
  assert.equal(d.url, `${URL0}/`);
  assert.equal(d.started, true);
  assert.match(d.password, /dashboard\.password$/);
  const again = await tool(client, 'reasonix_dashboard', {});
  assert.equal(again.started, false, 'reused');
  assert.equal(again.pid, d.pid);

  assert.equal((await req('/')).status, 303, 'the page sends you to the login');
  assert.equal((await req('/api/fleet')).status, 401);
  assert.equal((await req('/api/events')).status, 401);
  assert.equal((await req('/api/act', { method: 'POST', body: '{}' })).status, 401);
  // (fetch cannot set Host: node:http can, as a page served under another name would send it)
  const rebinding = await new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: PORT, path: '/login', headers: { Host: `evil.example:${PORT}` } }, (r) => { r.resume(); resolve(r.statusCode); }).on('error', reject);
  });
  assert.equal(rebinding, 421, 'another Host name is refused');
  const password = readFileSync(d.password, 'utf8').trim();
  const foreign = await req('/login', { method: 'POST', headers: { Origin: 'http://evil.example', 'Content-Type': 'application/x-www-form-urlencoded' }, body: `password=${password}` });
  assert.equal(foreign.status, 403, 'a login posted from another origin is refused');

  const bad = spawnSync(BIN, ['dashboard'], { env: { ...env(), REASONIX_MCP_DASHBOARD_HOST: '0.0.0.0' }, encoding: 'utf8', timeout: 10000 });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /refusing to listen on 0\.0\.0\.0: loopback only/);
});

test('wrong passwords are refused, then rate-limited', async () => {
  const form = (pw) => req('/login', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: `password=${pw}` });
  const codes = [];
  for (let i = 0; i < 6; i++) codes.push((await form('wrong' + i)).status);
  assert.deepEqual(codes, [401, 401, 401, 401, 401, 429]);
});

test('logged in: every orchestrator\'s agents, a timeline, steer and stop — and a host watch still gets its result', async () => {
  // the rate limit above lasts a minute: this test uses a fresh dashboard process
  process.kill(dashboardPid, 'SIGTERM');
  await until(() => !alive(dashboardPid), 5000, 'the dashboard stops');
  const a = await fx.connect({ name: 'dash-a', env: env() });
  const b = await fx.connect({ name: 'dash-b', env: env() });
  const d = await tool(a.client, 'reasonix_dashboard', {});
  dashboardPid = d.pid;
  const password = readFileSync(d.password, 'utf8').trim();
  const login = await req('/login', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: `password=${encodeURIComponent(password)}` });
  assert.equal(login.status, 303);
  const cookie = login.headers.get('set-cookie');
  assert.match(cookie, /HttpOnly/);
  assert.match(cookie, /SameSite=Strict/);
  const auth = { headers: { Cookie: cookie.split(';')[0] } };
  const page = await req('/', auth);
  assert.equal(page.status, 200);
  assert.match(await page.text(), /reasonix fleet/);

  const { session_id: mine } = await tool(a.client, 'reasonix_spawn', { task: 'HOLD-TASK for the dashboard', keep_alive: true });
  const { session_id: theirs } = await tool(b.client, 'reasonix_spawn', { task: 'QUICK-TASK other orchestrator' });
  const fleet = await (await req('/api/fleet', auth)).json();
  const owners = fleet.orchestrators.map((o) => o.id);
  assert.equal(owners.length, 2, 'grouped by orchestrator');
  const all = fleet.orchestrators.flatMap((o) => o.sessions.map((s) => s.session_id));
  assert.ok(all.includes(mine) && all.includes(theirs), 'every orchestrator\'s agents');

  // looking (fleet, session, events) while a host watches: the watch still gets the turn's result
  const watching = tool(a.client, 'reasonix_watch', { session_ids: [mine] });
  const s1 = await (await req(`/api/session?id=${mine}`, auth)).json();
  assert.equal(s1.session.owner, fleet.orchestrators.find((o) => o.sessions.some((s) => s.session_id === mine)).id);
  assert.ok(s1.timeline.some((r) => r.type === 'prompt'), 'the timeline has the prompt');
  const w = await watching;
  assert.match(w.results[mine].message, /held answer/, 'the host got its result although the page looked first');

  // steer from the page (an action from another origin is refused first)
  const forged = await req('/api/act', { method: 'POST', headers: { ...auth.headers, Origin: 'http://evil.example', 'Content-Type': 'application/json' },
    body: JSON.stringify({ session_id: mine, action: 'send', params: { message: 'DASH-STEER x' } }) });
  assert.equal(forged.status, 403);
  const sent = await req('/api/act', { method: 'POST', headers: { ...auth.headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({ session_id: mine, action: 'send', params: { message: 'DASH-STEER from the page' } }) });
  assert.equal(sent.status, 200, await sent.clone().text());
  assert.equal((await sent.json()).delivered, 'new_turn');
  const w2 = await tool(a.client, 'reasonix_watch', { session_ids: [mine] });
  assert.match(w2.results[mine].message, /steered answer/, 'the page\'s message ran as a turn of its owner\'s agent');
  const s2 = await (await req(`/api/session?id=${mine}`, auth)).json();
  assert.ok(s2.timeline.some((r) => r.type === 'prompt' && /DASH-STEER/.test(r.text)), 'the message is in the timeline');
  // the page asks only for what the journal gained since its last look
  assert.equal(s2.timeline_reset, true);
  const s3 = await (await req(`/api/session?id=${mine}&since=${s2.journal_offset}`, auth)).json();
  assert.deepEqual([s3.timeline, s3.journal_offset, s3.timeline_reset], [[], s2.journal_offset, undefined], 'nothing new, nothing sent');
  const s4 = await (await req(`/api/session?id=${mine}&since=${s2.journal_offset + 1e6}`, auth)).json();
  assert.equal(s4.timeline_reset, true, 'an offset past the end reads the journal anew');
  assert.deepEqual(s4.timeline, s2.timeline);

  const stop = await req('/api/act', { method: 'POST', headers: { ...auth.headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({ session_id: theirs, action: 'stop', params: {} }) });
  assert.equal((await stop.json()).status, 'exited');
  const bad = await req('/api/act', { method: 'POST', headers: { ...auth.headers, 'Content-Type': 'application/json' },
    body: JSON.stringify({ session_id: mine, action: 'shutdown' }) });
  assert.equal(bad.status, 400, 'only the dashboard\'s actions');
  await tool(a.client, 'reasonix_stop', { session_id: mine });
  process.kill(dashboardPid, 'SIGTERM');
  await until(() => !alive(dashboardPid), 5000, 'the dashboard stops');
});

// Waits until fn() (async) returns a truthy value; returns it.
async function eventually(fn, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('started with the first server, reused by the next, gone with the fleet; AUTOSTART=0 opts out', async () => {
  const port = PORT + 1;
  const auto = (v) => fx.env({ REASONIX_MCP_DASHBOARD_PORT: String(port), REASONIX_MCP_DASHBOARD_AUTOSTART: v });
  const health = async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).json();
  const dashboards = () => sandboxProcesses(fx.sb).filter((p) => / dashboard --with-fleet$/.test(p.cmd));

  const off = await fx.connect({ name: 'dash-off', env: auto('0') });
  await tool(off.client, 'reasonix_list', {});
  await until(() => /dashboard autostart off/.test(off.stderr.join('')), 10000, 'the server says autostart is off');
  assert.equal(dashboards().length, 0, 'opted out: no dashboard');

  const first = await fx.connect({ name: 'dash-first', env: auto('1') });
  await tool(first.client, 'reasonix_list', {});
  const h = await eventually(async () => { const x = await health(); return x.agentd && x; }, 15000, 'the dashboard answers, connected to agentd');
  // (the server logs once its own look at /healthz sees it, which may come after ours)
  await until(() => /dashboard started at http:\/\/127\.0\.0\.1:\d+\//.test(first.stderr.join('')), 10000, 'the first server says it started it');
  const second = await fx.connect({ name: 'dash-second', env: auto('1') });
  await tool(second.client, 'reasonix_list', {});
  await until(() => /dashboard reused at /.test(second.stderr.join('')), 15000, 'the second server reuses it');
  assert.equal((await health()).pid, h.pid, 'the same dashboard');
  assert.deepEqual(dashboards().map((p) => p.pid), [h.pid], 'one dashboard for the fleet');

  for (const c of [off, first, second]) await c.close();
  await shutdownAgentd(fx.sb);
  await until(() => !alive(h.pid), 10000, 'the dashboard ends with the fleet');
});
