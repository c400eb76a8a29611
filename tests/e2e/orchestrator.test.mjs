// Fleet view (the spec's selftest_orchestrator.py): sandbox posture, list with previews, counts and
// pending_only, wait, poll event filtering and caps, models, and orchestrator isolation.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, callTool } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'hold', last_role: 'user', user_contains: 'HOLD-TASK', delay_first: 30, text: 'held' }, // every hold is stopped, never waited for
    { name: 'quick', last_role: 'user', user_contains: 'QUICK-TASK', text: 'quick answer', chunk: 3 },
  ],
};

const fx = useFixture({ scenario });

const LONG = 'QUICK-TASK ' + 'describe the module layout in detail, '.repeat(8);

test('spawn reports posture; list shows previews, counts, pending_only; wait wakes on output', async () => {
  const c = await fx.connect({ name: 'fleet' });
  const a = await tool(c.client, 'reasonix_spawn', { task: LONG });
  assert.ok(['bwrap', 'none'].includes(a.posture.sandbox), JSON.stringify(a.posture));
  assert.equal(typeof a.posture.bash, 'string');
  assert.ok(Array.isArray(a.posture.allow_write));
  assert.equal(a.posture.workspace_root, realpathSync(fx.sb.ws));
  assert.equal(a.posture.config_file, join(fx.sb.rx, 'config.toml'));
  if (a.posture.sandbox === 'none') assert.match(a.posture.warning, /\S/, 'an unenforceable posture says so');
  assert.equal(a.cwd, realpathSync(fx.sb.ws));
  assert.equal(a.model, 'mock/mock-model');

  const ready = await tool(c.client, 'reasonix_wait', { session_ids: [a.session_id] });
  assert.deepEqual(ready.ready, [a.session_id]);
  assert.equal(ready.woke, true);
  assert.match(ready.sessions[a.session_id].status, /^(running|idle|starting)$/);
  await c.waitEvent((e) => e.session_id === a.session_id && e.event === 'turn_end');
  const hold = await tool(c.client, 'reasonix_spawn', { task: 'HOLD-TASK keep running' });

  const list = await tool(c.client, 'reasonix_list', {});
  const row = list.sessions.find((s) => s.session_id === a.session_id);
  assert.ok(row.task.length <= 125 && row.task.endsWith('…'), `preview: ${row.task}`);
  assert.equal(row.status, 'idle');
  assert.match(row.transcript_path, /\S/);
  assert.equal(list.counts.idle, 1);
  assert.equal((list.counts.running ?? 0) + (list.counts.starting ?? 0), 1);
  const full = await tool(c.client, 'reasonix_list', { include_task: true });
  assert.equal(full.sessions.find((s) => s.session_id === a.session_id).task, LONG);
  const detailed = await tool(c.client, 'reasonix_list', { detail: true });
  assert.ok('tool_approval' in detailed.sessions.find((s) => s.session_id === a.session_id));

  // pending_only: the uncollected finished turn, not a collected idle one.
  const pending = await tool(c.client, 'reasonix_list', { pending_only: true });
  const ids = pending.sessions.map((s) => s.session_id);
  assert.ok(ids.includes(a.session_id), 'uncollected terminal state is pending');
  await tool(c.client, 'reasonix_watch', { session_ids: [a.session_id] });
  const after = await tool(c.client, 'reasonix_list', { pending_only: true });
  assert.ok(!after.sessions.some((s) => s.session_id === a.session_id), 'collected: no longer pending');

  const timed = await tool(c.client, 'reasonix_wait', { session_ids: [a.session_id], timeout: 0.1 });
  assert.equal(timed.timed_out, true);
  assert.equal(timed.woke, false);
  assert.deepEqual(timed.ready, []);
  assert.deepEqual(timed.sessions[a.session_id], { status: 'idle', stop_reason: 'end_turn' }, 'each watched session\'s state');
  await tool(c.client, 'reasonix_stop', { session_id: hold.session_id });
});

test('pending_only also lists active sessions', async () => {
  const c = await fx.connect({ name: 'pending-active' });
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'HOLD-TASK keep running' });
  const pending = await tool(c.client, 'reasonix_list', { pending_only: true });
  try {
    assert.ok(pending.sessions.some((s) => s.session_id === sid), 'an active session is pending');
  } finally {
    await tool(c.client, 'reasonix_stop', { session_id: sid });
  }
});

test('poll filters static setup events by default; include/exclude/max_events change it', async () => {
  const c = await fx.connect({ name: 'filters' });
  const sids = [];
  for (let i = 0; i < 4; i++) sids.push((await tool(c.client, 'reasonix_spawn', { task: `QUICK-TASK filter ${i}` })).session_id);
  await Promise.all(sids.map((sid) => c.waitEvent((e) => e.session_id === sid && e.event === 'turn_end')));

  const def = await tool(c.client, 'reasonix_poll', { session_id: sids[0], detail: true });
  const defTypes = new Set(def.events.map((e) => e.type));
  assert.ok(!defTypes.has('available_commands_update') && !defTypes.has('config_option_update'), [...defTypes].join());
  assert.ok(def.events_filtered > 0);
  assert.equal(def.events_dropped, 0);

  const inc = await tool(c.client, 'reasonix_poll', { session_id: sids[1], detail: true, include_events: ['available_commands_update'] });
  assert.ok(inc.events.length > 0 && inc.events.every((e) => e.type === 'available_commands_update' || e.type === 'turn_end'),
    [...new Set(inc.events.map((e) => e.type))].join());

  const capped = await tool(c.client, 'reasonix_poll', { session_id: sids[2], detail: true, max_events: 1 });
  assert.equal(capped.events.length, 1);
  assert.ok(capped.events_dropped > 0, `the cut is reported: ${JSON.stringify(capped)}`);
  const excl = await tool(c.client, 'reasonix_poll', { session_id: sids[3], detail: true, exclude_events: ['agent_message_chunk'] });
  assert.ok(!excl.events.some((e) => e.type === 'agent_message_chunk'));
  assert.ok(excl.events_filtered > def.events_filtered, 'excluded chunks are counted as filtered');
  const sizes = { default: JSON.stringify(def).length, included: JSON.stringify(inc).length, capped: JSON.stringify(capped).length };
  console.log(`# detail poll sizes (bytes): ${JSON.stringify(sizes)}`);
});

test('models lists the configured refs', async () => {
  const { client } = await fx.connect({ name: 'models' });
  const m = await tool(client, 'reasonix_models', {});
  assert.ok(m.models.some((x) => x.ref === 'mock/mock-model'), JSON.stringify(m));
  assert.ok(m.models.every((x) => Array.isArray(x.supported_efforts)));
});

test('sessions are scoped to their orchestrator; REASONIX_MCP_ORCHESTRATOR_ID shares a scope', async () => {
  const owner = await fx.connect({ name: 'owner-cli' });
  const { session_id: sid } = await tool(owner.client, 'reasonix_spawn', { task: 'QUICK-TASK mine' });
  const other = await fx.connect({ name: 'other-cli' });
  const seen = await tool(other.client, 'reasonix_list', {});
  assert.ok(!seen.sessions.some((s) => s.session_id === sid), 'another orchestrator does not see it');
  for (const [name, args] of [['reasonix_poll', { session_id: sid }], ['reasonix_stop', { session_id: sid }],
    ['reasonix_send', { session_id: sid, message: 'hi' }], ['reasonix_watch', { session_ids: [sid] }]]) {
    const r = await callTool(other.client, name, args);
    assert.equal(r.result.isError, true, name);
    assert.match(r.result.content[0].text, /unknown session/, name);
  }
  // Same client name and workspace after a restart = same orchestrator.
  const again = await fx.connect({ name: 'owner-cli' });
  assert.ok((await tool(again.client, 'reasonix_list', {})).sessions.some((s) => s.session_id === sid));
  // An explicit id overrides the derivation.
  const x1 = await fx.connect({ name: 'cli-one', env: fx.env({ REASONIX_MCP_ORCHESTRATOR_ID: 'project-a-cli-1' }) });
  const { session_id: shared } = await tool(x1.client, 'reasonix_spawn', { task: 'QUICK-TASK shared' });
  const x2 = await fx.connect({ name: 'cli-two', env: fx.env({ REASONIX_MCP_ORCHESTRATOR_ID: 'project-a-cli-1' }) });
  assert.ok((await tool(x2.client, 'reasonix_list', {})).sessions.some((s) => s.session_id === shared));
  assert.ok(!(await tool(owner.client, 'reasonix_list', {})).sessions.some((s) => s.session_id === shared));
});
