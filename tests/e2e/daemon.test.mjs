// Survival (the spec's selftest_daemon.py): agents outlive a killed MCP server and a new server
// sees them; stop + resume revives a session with its history; six agents run concurrently; and
// reasonix_restart_agentd restarts the shared daemon, refusing (even with force) while another orchestrator has live
// agents, with the next call reconnecting transparently.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, tool, callTool, withTimeout, watchUntil, agentdPid, agentProcesses, alive, until } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'echo', last_role: 'user', user_contains: 'ECHO-TASK', text: 'ECHO:', echo: 'last_user' },
    { name: 'first', last_role: 'user', user_contains: 'FIRST-TURN', text: 'remember the word PELICAN' },
    { name: 'resumed', last_role: 'user', user_contains: 'AFTER-RESUME', text: 'resumed fine' },
    { name: 'next', last_role: 'user', user_contains: 'NEXT-TURN', text: 'next turn fine' },
    { name: 'hold', last_role: 'user', user_contains: 'HOLD-TASK', text: 'held', delay_first: 30 },
  ],
};

const fx = useFixture({ scenario });

// Kills a connected server with SIGKILL and waits until its transport saw it go.
async function killServer(c) {
  const gone = new Promise((r) => { const prev = c.transport.onclose; c.transport.onclose = () => { prev?.(); r(); }; });
  process.kill(c.pid, 'SIGKILL');
  await withTimeout(gone, 5000, 'server exit');
}

test('agents survive a killed MCP server; stop + resume revives a session with its history', async () => {
  const a = await fx.connect({ name: 'survivor' });
  const { session_id: sid } = await tool(a.client, 'reasonix_spawn', { task: 'FIRST-TURN learn a word', keep_alive: true });
  await watchUntil(a.client, [sid]);
  const daemon = agentdPid(fx.sb);
  const agents = agentProcesses(fx.sb).map((p) => p.pid);
  assert.ok(daemon, 'agentd runs');
  assert.equal(agents.length, 1);

  await killServer(a);
  assert.ok(alive(daemon), 'agentd outlives the server');
  assert.ok(agents.every(alive), 'the agent outlives the server');

  const b = await fx.connect({ name: 'survivor' });
  const list = await tool(b.client, 'reasonix_list', {});
  const row = list.sessions.find((s) => s.session_id === sid);
  assert.equal(row?.status, 'idle', 'the new server sees the live session');
  const sent = await tool(b.client, 'reasonix_send', { session_id: sid, message: 'NEXT-TURN continue' });
  assert.equal(sent.delivered, 'new_turn');
  assert.match((await watchUntil(b.client, [sid]))[sid].message, /next turn fine/);

  await tool(b.client, 'reasonix_stop', { session_id: sid });
  await until(() => agents.every((p) => !alive(p)), 10000, 'stopped agent process gone');
  const resumed = await tool(b.client, 'reasonix_resume', { session_id: sid });
  assert.equal(resumed.session_id, sid);
  const before = (await fx.provider.requests()).length;
  await tool(b.client, 'reasonix_send', { session_id: sid, message: 'AFTER-RESUME what was the word?' });
  assert.match((await watchUntil(b.client, [sid]))[sid].message, /resumed fine/);
  const req = (await fx.provider.requests(before)).find((q) => q.rule === 'resumed');
  assert.match(JSON.stringify(req.body.messages), /PELICAN/, 'the resumed agent has its history');
  await tool(b.client, 'reasonix_stop', { session_id: sid });
});

test('six agents run concurrently and each result comes back', async () => {
  const { client } = await fx.connect({ name: 'six-way' });
  const t0 = Date.now();
  const spawned = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => tool(client, 'reasonix_spawn', { task: `ECHO-TASK number ${n}` })));
  const ids = spawned.map((s) => s.session_id);
  assert.equal(new Set(ids).size, 6);
  const results = await watchUntil(client, ids);
  spawned.forEach((s, i) => {
    assert.equal(results[s.session_id].stop_reason, 'end_turn');
    assert.match(results[s.session_id].message, new RegExp(`ECHO-TASK number ${i + 1}\\b`));
  });
  const list = await tool(client, 'reasonix_list', {});
  assert.equal(list.counts.idle, 6);
  console.log(`# six concurrent agents: spawn → all results in ${Date.now() - t0} ms`);
  await Promise.all(ids.map((sid) => tool(client, 'reasonix_stop', { session_id: sid })));
});

test('restart_agentd refuses while another orchestrator has live agents, then restarts and reconnects', async () => {
  const mine = await fx.connect({ name: 'restarter' });
  const theirs = await fx.connect({ name: 'bystander' });
  const { session_id: other } = await tool(theirs.client, 'reasonix_spawn', { task: 'ECHO-TASK bystander', keep_alive: true });
  await watchUntil(theirs.client, [other]);
  for (const args of [{}, { force: true }]) {
    const refused = await callTool(mine.client, 'reasonix_restart_agentd', args);
    assert.equal(refused.result.isError, true, `refused with ${JSON.stringify(args)}`);
    assert.match(refused.result.content[0].text, /other orchestrators have 1 agent\(s\) at work or with undelivered results/);
    assert.doesNotMatch(refused.result.content[0].text, new RegExp(other), 'never names another orchestrator\'s session');
  }
  await tool(theirs.client, 'reasonix_stop', { session_id: other });

  // my own agent, idle with its result delivered, does not refuse it (the reload's rule): it is closed, resumable
  const { session_id: done } = await tool(mine.client, 'reasonix_spawn', { task: 'ECHO-TASK mine' });
  await watchUntil(mine.client, [done]);
  const oldPid = agentdPid(fx.sb);
  const r = await tool(mine.client, 'reasonix_restart_agentd', {});
  assert.equal(r.restarted, true);
  assert.equal(r.old_pid, oldPid);
  assert.notEqual(r.agentd_pid, oldPid, 'answered by a distinct daemon');
  assert.equal(r.agentd_pid, agentdPid(fx.sb), 'the one now running');
  assert.equal(r.current_binary, true);
  assert.deepEqual(r.recoverable_sessions, [done]);
  assert.deepEqual(r.checkpointed_sessions, []);
  assert.ok(!alive(oldPid), 'the old daemon is gone when the call returns');
  // The next call starts a fresh daemon and reconnects without any help.
  const list = await tool(theirs.client, 'reasonix_list', { all: true });
  const row = list.sessions.find((s) => s.session_id === other);
  assert.ok(['exited', 'orphaned'].includes(row?.status), `the terminated session stays listed and resumable: ${JSON.stringify(row)}`);
  const newPid = agentdPid(fx.sb);
  assert.ok(newPid && newPid !== oldPid, 'a fresh agentd');
  assert.match(theirs.stderr.join(''), /agentd link: disconnected/);
});

test('restart_agentd force: an agent at work is checkpointed; a daemon that does not answer is ended TERM then KILL', async () => {
  const { client } = await fx.connect({ name: 'forcer' });
  const { session_id: busy } = await tool(client, 'reasonix_spawn', { task: 'HOLD-TASK long turn' });
  const refused = await callTool(client, 'reasonix_restart_agentd', {});
  assert.equal(refused.result.isError, true);
  assert.match(refused.result.content[0].text, new RegExp(`your agents still need the daemon: ${busy} \\((running|starting)\\)`));
  const r = await tool(client, 'reasonix_restart_agentd', { force: true });
  assert.deepEqual(r.checkpointed_sessions, [busy]);
  assert.deepEqual(r.recoverable_sessions, [busy]);
  const back = await tool(client, 'reasonix_resume', { session_id: busy });
  assert.equal(back.status, 'idle', 'checkpointed: it resumes');

  // a wedged daemon (stopped): without force the call says so; with force it is killed and replaced
  const wedged = agentdPid(fx.sb);
  process.kill(wedged, 'SIGSTOP');
  try {
    const no = await callTool(client, 'reasonix_restart_agentd', {});
    assert.equal(no.result.isError, true);
    assert.match(no.result.content[0].text, /does not answer; pass force=true/);
    const t0 = Date.now();
    const k = await tool(client, 'reasonix_restart_agentd', { force: true });
    console.log(`# forced restart of a stopped daemon: ${Date.now() - t0} ms, ${JSON.stringify(k)}`);
    assert.equal(k.escalated, 'KILL', 'a stopped process ignores TERM');
    assert.equal(k.old_pid, wedged);
    assert.notEqual(k.agentd_pid, wedged);
    assert.deepEqual(k.recoverable_sessions, [busy], 'its live agent is orphaned: resumable');
  } finally {
    try { process.kill(wedged, 'SIGCONT'); } catch { /* gone */ }
  }
  await tool(client, 'reasonix_stop', { session_id: busy }).catch(() => {});
});
