// spawn → poll → steer → stop against the real agent on the offline provider (the spec's selftest.py),
// plus the lean-poll budget: a default poll of a finished short turn is under 1 KB of JSON.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, tool, callTool } from './helpers.mjs';

const SLOW = 'abcdefghij'.repeat(12); // 3 s of stream: the poll and the steer land in it on a slow build
const scenario = {
  rules: [
    // The steer arrives as the last user message of the same turn.
    { name: 'steered', last_role: 'user', user_contains: 'STEER-ONE', text: 'STEERED-OK use email' },
    { name: 'slow', last_role: 'user', user_contains: 'SLOW-TASK', text: SLOW, chunk: 2, delay: 0.05 },
    { name: 'short', last_role: 'user', user_contains: 'SHORT-TASK', text: 'done: 42' },
    { name: 'again', last_role: 'user', user_contains: 'NEXT-TURN', text: 'second turn ok' },
    { name: 'long', last_role: 'user', user_contains: 'LONG-TASK', reasoning: 'THINKING-HARD about it', text: `${'A'.repeat(3000)}MIDDLE${'B'.repeat(3000)}` },
  ],
  default: { text: 'default reply' },
};

const fx = useFixture({ scenario });

test('spawn → poll → steer → watch → stop → resume-needed error', async () => {
  const { client } = await fx.connect();
  const spawned = await tool(client, 'reasonix_spawn', { task: 'SLOW-TASK: write a greeting' });
  assert.match(spawned.session_id, /\S/);
  assert.ok(spawned.posture, 'spawn reports the sandbox posture');
  assert.equal(typeof spawned.posture.sandbox, 'string');
  const sid = spawned.session_id;

  const p1 = await tool(client, 'reasonix_poll', { session_id: sid });
  assert.equal(p1.session_id, sid);
  assert.ok(['starting', 'running'].includes(p1.status), `running after spawn, got ${p1.status}`);

  const sent = await tool(client, 'reasonix_send', { session_id: sid, message: 'STEER-ONE use email instead', expect: 'steer' });
  assert.equal(sent.delivered, 'steer');

  const { results } = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  const r = results[sid];
  assert.equal(r.status, 'idle');
  assert.equal(r.stop_reason, 'end_turn');
  assert.match(r.message, /STEERED-OK/);
  assert.ok(r.transcript_path);

  // The provider saw the steer inside the same turn.
  const reqs = await fx.provider.requests();
  assert.ok(reqs.some((q) => q.rule === 'steered'), 'steer reached the model');

  // Idle: send without expect starts a new turn; expect=steer would be refused.
  const refused = await callTool(client, 'reasonix_send', { session_id: sid, message: 'NEXT-TURN please', expect: 'steer' });
  assert.equal(refused.result.isError, true, 'expect=steer refuses to start a turn');
  const next = await tool(client, 'reasonix_send', { session_id: sid, message: 'NEXT-TURN please' });
  assert.equal(next.delivered, 'new_turn');
  const second = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  assert.match(second.results[sid].message, /second turn ok/);

  const stopped = await tool(client, 'reasonix_stop', { session_id: sid });
  assert.equal(stopped.status, 'exited');
  const tomb = await tool(client, 'reasonix_poll', { session_id: sid });
  assert.equal(tomb.status, 'exited', 'poll keeps reporting the tombstone');
  const dead = await callTool(client, 'reasonix_send', { session_id: sid, message: 'hello?' });
  assert.equal(dead.result.isError, true);
  assert.match(dead.result.content[0].text, /resume/i);
  const unknown = await callTool(client, 'reasonix_poll', { session_id: 'no-such-session' });
  assert.equal(unknown.result.isError, true);
  assert.match(unknown.result.content[0].text, /reasonix_list/);
});

test('a default poll of a finished short turn is under 1 KB of JSON', async () => {
  const c = await fx.connect({ name: 'lean-poll' });
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'SHORT-TASK: answer briefly' });
  await c.waitEvent((e) => e.session_id === sid && e.event === 'turn_end', 60000, 'turn_end event');
  const { result, data } = await callTool(c.client, 'reasonix_poll', { session_id: sid });
  const structured = JSON.stringify(data).length;
  const text = result.content[0].text.length;
  console.log(`# lean poll of a finished short turn: structuredContent ${structured} bytes, text block ${text} bytes: ${result.content[0].text}`);
  assert.equal(data.status, 'idle');
  assert.match(data.message, /done: 42/);
  assert.ok(structured < 1024, `structured poll is ${structured} bytes`);
  assert.ok(text < 1024, `text poll is ${text} bytes`);
  for (const k of ['events', 'turns', 'thought', 'full_text', 'text']) assert.equal(data[k], undefined, `${k} is opt-in`);
  // detail=true gives the detailed shape on demand.
  const detail = await tool(c.client, 'reasonix_poll', { session_id: sid, detail: true, include_full: true });
  assert.ok(Array.isArray(detail.turns) && Array.isArray(detail.events));
  assert.equal(typeof detail.events_filtered, 'number');
  assert.match(detail.full_text, /done: 42/);
  await tool(c.client, 'reasonix_stop', { session_id: sid });
});

test('long output is capped and reported; thought and full text are opt-in', async () => {
  const c = await fx.connect({ name: 'caps' });
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'LONG-TASK write a lot' });
  const { results } = await tool(c.client, 'reasonix_watch', { session_ids: [sid] });
  const r = results[sid];
  assert.equal(r.message_truncated, true, 'the compact message says it was cut');
  assert.ok(r.message.length <= 4100, `message is ${r.message.length} chars`);
  assert.ok(r.message.startsWith('AAA') && r.message.endsWith('BBB'), 'first and last parts kept');
  assert.ok(!r.message.includes('MIDDLE'));
  assert.equal(r.thought, undefined);
  const lean = await tool(c.client, 'reasonix_poll', { session_id: sid });
  assert.equal(lean.full_text, undefined);
  assert.equal(lean.full_thought, undefined);
  const full = await tool(c.client, 'reasonix_poll', { session_id: sid, include_full: true, include_thought: true });
  assert.match(full.full_text, /MIDDLE/, 'the full text stays available on demand');
  assert.match(full.full_thought, /THINKING-HARD/);
  await tool(c.client, 'reasonix_stop', { session_id: sid });
});
