// Fleet tools against the real agent on the offline provider: reasonix_broadcast reaches a running
// agent (as a steer) and an idle one (as a new turn) in one call, reports an exited one as a failure
// without undoing the others, and refuses the whole call for an id that is not the caller's.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, tool, callTool } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'broadcast', last_role: 'user', user_contains: 'BCAST-ALL', text: 'BCAST-OK' },
    { name: 'slow', last_role: 'user', user_contains: 'SLOW-TASK', text: 'abcdefghij'.repeat(12), chunk: 2, delay: 0.05 },
    { name: 'short', last_role: 'user', user_contains: 'SHORT-TASK', text: 'done: 42' },
  ],
  default: { text: 'default reply' },
};

const fx = useFixture({ scenario });

test('broadcast: a running agent is steered, an idle one starts a turn, an exited one fails alone', async () => {
  const { client } = await fx.connect();
  const idle = (await tool(client, 'reasonix_spawn', { task: 'SHORT-TASK: answer' })).session_id;
  const gone = (await tool(client, 'reasonix_spawn', { task: 'SHORT-TASK: answer too' })).session_id;
  const first = await tool(client, 'reasonix_watch', { session_ids: [idle, gone] });
  assert.ok(first.results[idle] || first.results[gone], 'a first turn ended');
  await tool(client, 'reasonix_stop', { session_id: gone });
  for (;;) {
    const p = await tool(client, 'reasonix_poll', { session_id: idle });
    if (p.status === 'idle') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const running = (await tool(client, 'reasonix_spawn', { task: 'SLOW-TASK: write a lot' })).session_id;

  const foreign = await callTool(client, 'reasonix_broadcast', { session_ids: [idle, 'no-such-session'], message: 'BCAST-ALL x' });
  assert.equal(foreign.result.isError, true, 'an id that is not yours refuses the whole call');
  assert.match(foreign.result.content[0].text, /reasonix_list/);
  const badPar = await callTool(client, 'reasonix_broadcast', { session_ids: [idle], message: 'BCAST-ALL x', parallelism: 17 });
  assert.equal(badPar.result.isError, true, 'parallelism above 16 is refused');

  const t0 = Date.now();
  const b = await tool(client, 'reasonix_broadcast', { session_ids: [running, idle, gone], message: 'BCAST-ALL switch to plan B' });
  console.log(`# broadcast to 3 sessions answered in ${Date.now() - t0} ms: ${JSON.stringify(b)}`);
  assert.deepEqual(b.results.map((r) => r.session_id), [running, idle, gone], 'results in session_ids order');
  assert.equal(b.results[0].delivered, 'steer');
  assert.equal(b.results[1].delivered, 'new_turn');
  assert.equal(b.results[2].status, 'exited');
  assert.match(b.results[2].error, /resume/);
  assert.equal(b.delivered, 2);
  assert.equal(b.failed, 1);

  const seen = {};
  while (!seen[running] || !seen[idle]) {
    const w = await tool(client, 'reasonix_watch', { session_ids: [running, idle].filter((id) => !seen[id]) });
    for (const [id, r] of Object.entries(w.results)) if (r.status === 'idle') seen[id] = r;
  }
  assert.match(seen[running].message, /BCAST-OK/, 'the running turn took the steer');
  assert.match(seen[idle].message, /BCAST-OK/, 'the idle agent ran a new turn');
  const reqs = await fx.provider.requests();
  assert.equal(reqs.filter((q) => q.rule === 'broadcast').length >= 2, true, 'both agents sent the message to the model');
});
