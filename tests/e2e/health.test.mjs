// Health of running turns against the real agent, with a 2 s stall threshold: an agent waiting on a
// provider that does not answer is stalled (a watch wakes once for it, nothing is killed, the turn
// still ends); an agent queued behind another's workspace lease is blocked, the holder named.
// needs: agent python3 clients
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, rmSync } from 'node:fs';
import { useFixture, tool } from './helpers.mjs';

// The lease holder's command runs until the test has seen the queued agent blocked (at most 60 s),
// so a slow start of the second agent cannot find the lease already free.
const GATE = '/tmp/rxhealth-gate-' + process.pid;
after(() => rmSync(GATE, { force: true }));

const scenario = {
  rules: [
    { name: 'silent', last_role: 'user', user_contains: 'SILENT-TASK', text: 'answered at last', delay_first: 10 },
    { name: 'lease', last_role: 'user', user_contains: 'LEASE-TASK', tool_calls: [{ name: 'bash', arguments: { command: `for i in $(seq 600); do [ -e ${GATE} ] && break; sleep 0.1; done; echo one` } }] },
    { name: 'after', last_tool_name: 'bash', text: 'job done' },
  ],
};

const fx = useFixture({ scenario });
const env = () => fx.env({ REASONIX_MCP_RUNTIME_STALLED_AFTER: '2' });

test('a quiet turn is stalled: one watch wakes for it, the turn goes on and ends', async () => {
  const { client } = await fx.connect({ name: 'health-stall', env: env() });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'SILENT-TASK wait for the model' });
  const t0 = Date.now();
  const w = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  console.log(`# stalled watch woke after ${Date.now() - t0} ms`);
  assert.equal(w.status, 'running', 'woken while the turn still runs');
  assert.equal(w.health.state, 'stalled');
  assert.ok(w.health.quiet_s >= 2, JSON.stringify(w.health));
  const row = (await tool(client, 'reasonix_list', {})).sessions.find((s) => s.session_id === sid);
  assert.equal(row.health.state, 'stalled', 'list shows it too');
  const end = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  assert.equal(end.status, 'idle', 'the stall woke the watch once; the next one waits for the end');
  assert.match(end.message, /answered at last/, 'nothing was killed');
  assert.equal(end.health, undefined);
});

test('an agent queued behind another agent\'s workspace lease is blocked, the holder named', async () => {
  const { client } = await fx.connect({ name: 'health-lease', env: env() });
  const { session_id: holder } = await tool(client, 'reasonix_spawn', { task: 'LEASE-TASK first', tool_approval: 'yolo' });
  for (const deadline = Date.now() + 20000; ;) { // until the holder's bash runs (it holds the lease)
    assert.ok(Date.now() < deadline, 'the first agent started its command');
    await tool(client, 'reasonix_wait', { session_ids: [holder], timeout: 1 });
    const p = await tool(client, 'reasonix_poll', { session_id: holder });
    if (p.current_work?.type === 'tool') break;
  }
  const { session_id: queued } = await tool(client, 'reasonix_spawn', { task: 'LEASE-TASK second', tool_approval: 'yolo' });
  let blocked;
  const deadline = Date.now() + 20000;
  while (!blocked) {
    assert.ok(Date.now() < deadline, 'the second agent was seen blocked');
    await tool(client, 'reasonix_wait', { session_ids: [queued], timeout: 0.5 });
    await tool(client, 'reasonix_poll', { session_id: queued }); // the next wait waits for new output
    const row = (await tool(client, 'reasonix_list', {})).sessions.find((s) => s.session_id === queued);
    if (row.health?.state === 'blocked') blocked = row.health;
  }
  writeFileSync(GATE, '');
  assert.equal(blocked.workspace_lease_holder, holder);
  const p = await tool(client, 'reasonix_poll', { session_id: queued });
  assert.equal(p.health?.state, 'blocked', 'an anomalous poll carries health');
  const done = {};
  while (!done[holder] || !done[queued]) {
    const w = await tool(client, 'reasonix_watch', { session_ids: [holder, queued].filter((id) => !done[id]) });
    for (const [id, r] of Object.entries(w.results)) if (r.status === 'idle') done[id] = r;
  }
  assert.match(done[queued].message, /job done/, 'the queued agent ran once the lease was free');
});
