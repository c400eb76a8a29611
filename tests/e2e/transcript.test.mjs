// Transcript and plan fields (the spec's selftest_transcript.py) and the once-per-session status
// contract (selftest_prompt_injection.py): the agent plans with todo_write, writes and reads a file;
// watch/poll carry the plan and current work, reasonix_transcript what it actually did.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, tool } from './helpers.mjs';

const todos = [{ content: 'Inspect code', status: 'completed' }, { content: 'Write notes', status: 'in_progress' }];
const scenario = {
  rules: [
    { name: 'plan', last_role: 'user', user_contains: 'PLAN-TASK', tool_calls: [{ name: 'todo_write', arguments: { todos } }] },
    { name: 'write', last_tool_name: 'todo_write', tool_calls: [{ name: 'write_file', arguments: { path: 'notes/hello.txt', content: 'line1\nline2\n' } }] },
    { name: 'read', last_tool_name: 'write_file', tool_calls: [{ name: 'read_file', arguments: { path: 'notes/hello.txt' } }] },
    { name: 'final', last_tool_name: 'read_file', text: 'all done: notes written' },
    { name: 'follow', last_role: 'user', user_contains: 'FOLLOW-UP', text: 'follow-up done' },
  ],
};

const fx = useFixture({ scenario });

test('plan, current work, turns and the transcript of tool calls and files', async () => {
  const { client } = await fx.connect({ name: 'transcript' });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'PLAN-TASK write notes/hello.txt', keep_alive: true });
  // detail=true: the poll-shaped result right away (a compact watch would consume the turn detail).
  const { results } = await tool(client, 'reasonix_watch', { session_ids: [sid], detail: true, include_events: ['tool_call', 'plan'] });
  const detail = results[sid];
  assert.equal(detail.stop_reason, 'end_turn');
  assert.match(detail.message, /all done/);
  assert.deepEqual(detail.plan.map((e) => [e.content, e.status]), todos.map((t) => [t.content, t.status]));
  assert.equal(detail.current_work, undefined, 'the turn ended: no current work (parity.test.mjs sees it while working)');
  assert.ok(detail.turns.length >= 1, JSON.stringify(detail));
  assert.match(detail.turns.at(-1).text, /all done/);
  assert.equal(detail.turns.at(-1).stop_reason, 'end_turn');
  const types = new Set(detail.events.map((e) => e.type));
  assert.ok(types.has('tool_call') && types.has('plan'), [...types].join());
  for (const t of types) assert.ok(['tool_call', 'plan', 'permission_request', 'turn_end', 'process_exited'].includes(t), `filtered type ${t}`);
  assert.ok(detail.events_filtered > 0, 'other types were filtered out and counted');
  assert.match(detail.transcript_path, /\S/);
  // Consumed: the next lean poll has nothing new but the state.
  const lean = await tool(client, 'reasonix_poll', { session_id: sid });
  assert.equal(lean.message, undefined);
  assert.equal(lean.status, 'idle');

  const tr = await tool(client, 'reasonix_transcript', { session_id: sid });
  const names = tr.tool_calls.map((c) => c.tool || c.title);
  for (const n of ['todo_write', 'write_file', 'read_file']) assert.ok(names.some((x) => String(x).includes(n)), `${n} in ${names}`);
  const write = tr.tool_calls.find((c) => String(c.tool || c.title).includes('write_file'));
  assert.equal(write.args.path, 'notes/hello.txt');
  assert.ok(tr.files.written.some((f) => f.endsWith('notes/hello.txt')), JSON.stringify(tr.files));
  assert.ok(tr.files.read.some((f) => f.endsWith('notes/hello.txt')), JSON.stringify(tr.files));
  assert.match(tr.last_text, /all done/);
  assert.equal(typeof tr.work_duration_s, 'number');
  const one = await tool(client, 'reasonix_transcript', { session_id: sid, max_tool_calls: 1 });
  assert.equal(one.tool_calls.length, 1, 'max_tool_calls caps the list');

  // The status contract rides the first prompt only.
  await tool(client, 'reasonix_send', { session_id: sid, message: 'FOLLOW-UP please' });
  const second = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  assert.match(second.results[sid].message, /follow-up done/);
  const reqs = await fx.provider.requests();
  const userTexts = (q) => q.body.messages.filter((m) => m.role === 'user').map((m) => JSON.stringify(m.content));
  const withContract = (q) => userTexts(q).filter((t) => t.includes('[reasonix-mcp status contract]')).length;
  const followReq = reqs.find((q) => q.rule === 'follow');
  assert.equal(withContract(reqs.find((q) => q.rule === 'plan')), 1);
  assert.equal(withContract(followReq), 1, 'the follow-up turn does not repeat the contract');
  await tool(client, 'reasonix_stop', { session_id: sid });
});
