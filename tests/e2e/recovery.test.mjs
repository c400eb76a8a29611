// Background-bash recovery against the real agent: a background job the agent started fails, the
// agent ends its turn with "[warning] background bash failed: needs attention", and agentd starts a
// fresh turn telling it to deal with the job instead of reporting that turn; at most 3 in a row,
// after which the turn is reported with what was tried.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, tool } from './helpers.mjs';

const failingJob = { name: 'bash', arguments: { command: 'sleep 0.3; echo boom; exit 3', run_in_background: true } };
// the job fails while the model "thinks" over its answer, so the agent sees it before the turn ends
const afterJob = { name: 'after-job', last_tool_name: 'bash', text: 'started the job', delay_first: 1.5 };

const fx = useFixture({ scenario: {
  rules: [
    { name: 'job', last_role: 'user', user_contains: 'BG-TASK', tool_calls: [failingJob] },
    afterJob,
    { name: 'recover', last_role: 'user', user_contains: 'reasonix-mcp background recovery', text: 'fixed the command; all done' },
  ],
} });

test('a failed background job gets one recovery turn; the orchestrator sees its outcome', async () => {
  const { client } = await fx.connect({ name: 'recovery' });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'BG-TASK run the job', tool_approval: 'yolo', keep_alive: true });
  const r = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  assert.equal(r.status, 'idle');
  assert.match(r.message, /fixed the command/, 'the turn with the warning was not reported; the recovery turn was');
  assert.deepEqual(r.background_recovery, { attempts: 1 });
  const reqs = await fx.provider.requests();
  const recovery = reqs.filter((q) => q.rule === 'recover');
  assert.equal(recovery.length, 1);
  assert.match(JSON.stringify(recovery[0].body.messages.at(-1)), /job_output/, 'the prompt says what to do');
  const p = await tool(client, 'reasonix_poll', { session_id: sid, detail: true });
  const ev = p.events.filter((e) => e.type === 'background_recovery');
  assert.deepEqual(ev.map((e) => [e.attempt, e.max]), [[1, 3]]);
  assert.equal(p.events.filter((e) => e.type === 'turn_end').length, 1, 'one turn end reported: the recovery turn\'s');
  await tool(client, 'reasonix_stop', { session_id: sid });
});

test('recovery stops after 3 in a row and the last turn is reported as it ended', async () => {
  await fx.provider.setScenario({
    rules: [
      { name: 'job', last_role: 'user', user_contains: 'BG-TASK', tool_calls: [failingJob] },
      afterJob,
      { name: 'recover-fails', last_role: 'user', user_contains: 'reasonix-mcp background recovery', tool_calls: [failingJob] },
    ],
  });
  const before = (await fx.provider.requests()).length;
  const { client } = await fx.connect({ name: 'recovery-cap' });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'BG-TASK run the job again', tool_approval: 'yolo', keep_alive: true });
  const r = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  assert.equal(r.status, 'idle');
  assert.match(r.message, /background bash failed: needs attention/);
  assert.deepEqual(r.background_recovery, { attempts: 3, gave_up: true });
  const reqs = (await fx.provider.requests()).slice(before);
  assert.equal(reqs.filter((q) => q.rule === 'recover-fails').length, 3, 'three recovery turns, no fourth');
  await tool(client, 'reasonix_stop', { session_id: sid });
});
