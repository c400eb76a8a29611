// Fleet tools against the real agent on the offline provider: reasonix_broadcast reaches a running
// agent (as a steer) and an idle one (as a new turn) in one call, reports an exited one as a failure
// without undoing the others, and refuses the whole call for an id that is not the caller's;
// reasonix_resume_fleet after a killed agentd continues the turn it cut short and leaves an idle
// session idle.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, tool, callTool, agentdPid, agentProcesses, alive, until } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'continued', last_role: 'user', user_contains: 'was interrupted', text: 'CONTINUED-OK' },
    { name: 'hang', last_role: 'user', user_contains: 'HANG-TASK', text: 'z'.repeat(400), chunk: 1, delay: 0.2 },
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

test('resume_fleet after a killed agentd: the interrupted turn continues, the idle session stays idle', async () => {
  const { client } = await fx.connect({ name: 'resume-fleet' });
  const idle = (await tool(client, 'reasonix_spawn', { task: 'SHORT-TASK: answer' })).session_id;
  await tool(client, 'reasonix_watch', { session_ids: [idle] });
  const cut = (await tool(client, 'reasonix_spawn', { task: 'HANG-TASK: a long job' })).session_id;
  for (let i = 0; !(await fx.provider.requests()).some((q) => q.rule === 'hang'); i++) {
    assert.ok(i < 300, 'the long turn reached the model');
    await new Promise((res) => setTimeout(res, 100));
  }
  const daemon = agentdPid(fx.sb);
  const agents = agentProcesses(fx.sb);
  process.kill(daemon, 'SIGKILL');
  await until(() => agents.every((a) => !alive(a.pid)), 10000, 'agents die with agentd');

  const bad = await callTool(client, 'reasonix_resume_fleet', { session_ids: [cut], parallelism: 0 });
  assert.equal(bad.result.isError, true, 'parallelism 0 is refused');
  const t0 = Date.now();
  const r = await tool(client, 'reasonix_resume_fleet', { session_ids: [cut, idle] });
  console.log(`# resume_fleet of 2 sessions answered in ${Date.now() - t0} ms: ${JSON.stringify(r)}`);
  assert.deepEqual(r.session_ids, [cut, idle]);
  assert.equal(r.resumed, 2);
  assert.equal(r.failed, 0);
  assert.equal(r.results[0].continued, true, 'the interrupted turn continues');
  assert.equal(r.results[1].continued, undefined);
  assert.equal(r.results[1].status, 'idle', 'the idle session stays idle');
  const w = await tool(client, 'reasonix_watch', { session_ids: [cut] });
  assert.match(w.results[cut].message, /CONTINUED-OK/);
  assert.equal((await tool(client, 'reasonix_poll', { session_id: idle })).status, 'idle');
  await tool(client, 'reasonix_stop', { session_id: cut });
  await tool(client, 'reasonix_stop', { session_id: idle });
});
