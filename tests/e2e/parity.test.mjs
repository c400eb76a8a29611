// Parity bugs against the real agent: current work only while the agent works; event selectors opt
// into the detailed poll and no lean result consumes the events it does not show; max_events over
// the cap is clamped and said; numbers print in their shortest form; agentd's log names no nil.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, callTool } from './helpers.mjs';

const todos = [{ content: 'Inspect code', status: 'completed' }, { content: 'Write notes', status: 'in_progress' }];
const scenario = {
  rules: [
    { name: 'plan', last_role: 'user', user_contains: 'PLAN-TASK', tool_calls: [{ name: 'todo_write', arguments: { todos } }] },
    { name: 'final', last_tool_name: 'todo_write', text: 'all done', delay_first: 4 }, // the polls see the plan while the turn runs, even on a slow build
  ],
};

const fx = useFixture({ scenario });

test('current work while working only; selectors imply detail; lean results leave the events', async () => {
  const { client } = await fx.connect({ name: 'parity' });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'PLAN-TASK take notes', keep_alive: true });
  let working;
  for (let i = 0; !working; i++) {
    assert.ok(i < 50, 'the plan arrived while the turn ran');
    const w = await tool(client, 'reasonix_wait', { session_ids: [sid], timeout: 10 });
    assert.equal(w.woke, true, 'wait woke on output');
    const p = await tool(client, 'reasonix_poll', { session_id: sid });
    assert.equal(p.events, undefined, 'a lean poll has no events');
    if (p.current_work?.type === 'plan_step') working = p;
  }
  assert.equal(working.status, 'running');
  assert.deepEqual(working.current_work, { type: 'plan_step', content: 'Write notes' });

  const done = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  assert.equal(done.status, 'idle');
  assert.match(done.message, /all done/);
  assert.equal(done.current_work, undefined, 'the turn ended: no current work');
  const row = (await tool(client, 'reasonix_list', { detail: true })).sessions.find((s) => s.session_id === sid);
  assert.equal(row.current_work, undefined);
  assert.equal(row.plan[1].status, 'in_progress', 'the plan itself stays');

  // the lean polls and the compact watch consumed no event: a selector (without detail) shows them
  const sel = await tool(client, 'reasonix_poll', { session_id: sid, max_events: 500 });
  assert.equal(sel.max_events_clamped, 200, 'over the cap: clamped, and said');
  const types = new Set(sel.events.map((e) => e.type));
  for (const t of ['tool_call', 'plan', 'turn_end']) assert.ok(types.has(t), `${t} in ${[...types]}`);
  assert.equal(typeof sel.events_filtered, 'number', 'the detailed shape');
  const again = await tool(client, 'reasonix_poll', { session_id: sid, detail: true });
  assert.deepEqual(again.events, [], 'shown once, then consumed');
  const refused = await callTool(client, 'reasonix_poll', { session_id: sid, detail: false, include_events: ['plan'] });
  assert.equal(refused.result.isError, true);
  assert.match(refused.result.content[0].text, /only detail=true shows/);

  // numbers: the shortest form that reads back the same
  const tr = await callTool(client, 'reasonix_transcript', { session_id: sid });
  const raw = tr.result.content[0].text;
  assert.doesNotMatch(raw, /\d\.\d*0000000|\d\.\d*9999999/, 'no float noise');
  assert.match(String(tr.data.work_duration_s), /^\d+(\.\d)?$/);
  const list = await callTool(client, 'reasonix_list', {});
  assert.match(list.result.content[0].text, /"created_at":\d+(\.\d{1,3})?[,}]/);

  await tool(client, 'reasonix_stop', { session_id: sid });
  const stopped = await tool(client, 'reasonix_poll', { session_id: sid });
  assert.equal(stopped.status, 'exited');
  assert.equal(stopped.current_work, undefined, 'an exited agent is at no work');

  const log = readFileSync(join(fx.sb.mcp, 'agentd.log'), 'utf8');
  assert.match(log, /hello from /);
  assert.doesNotMatch(log, /for nil/);
});
