// Fleet operations against the real agent on the offline provider: reasonix_spawn_fleet (a fleet
// file of 8 agents with overrides; one bad entry, a model the agent does not offer, rejects the whole
// file with no agent started), reasonix_configure when idle, in a turn and exited (and ask→yolo
// allowing a pending tool gate), reasonix_resume with options and on a live session (already_live).
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, callTool, watchUntil, agentProcesses, until } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'quick', last_role: 'user', user_contains: 'QUICK-TASK', text: 'quick done' },
    { name: 'hold', last_role: 'user', user_contains: 'HOLD-TASK', text: 'held done', delay_first: 2 },
    { name: 'gate', last_role: 'user', user_contains: 'GATE-TASK', tool_calls: [{ name: 'write_file', arguments: { path: 'gate.txt', content: 'GATE\n' } }] },
    { name: 'after-gate', last_tool_name: 'write_file', text: 'gate done' },
  ],
  default: { text: 'default reply' },
};

// the mock model offers efforts (as a reasoning model would): overrides and configure change one
const fx = useFixture({ scenario, config: { modelOverrides: { 'mock-model': { supported_efforts: ['low', 'high', 'max'], default_effort: 'high' } } } });

const settled = (r) => r.status === 'idle' || r.status === 'exited';

// Watches ids until every one has settled; returns the last result of each.
async function watchAll(client, ids) {
  const seen = {};
  while (ids.some((id) => !seen[id])) {
    const w = await tool(client, 'reasonix_watch', { session_ids: ids.filter((id) => !seen[id]) });
    for (const [id, r] of Object.entries(w.results)) if (settled(r)) seen[id] = r;
  }
  return seen;
}

// The efforts the mock model offers besides its default (configure and overrides need a real change).
async function otherEffort(client) {
  const { models } = await tool(client, 'reasonix_models', {});
  const m = models.find((x) => x.ref === 'mock/mock-model');
  const other = m.supported_efforts.find((e) => e !== m.default_effort && e !== 'auto');
  assert.ok(other, `the mock model offers a second effort: ${JSON.stringify(m)}`);
  return other;
}

test('spawn_fleet: a file of 8 agents with overrides, checked whole before anything starts', async () => {
  const { client } = await fx.connect({ name: 'fleet-file' });
  const effort = await otherEffort(client);
  mkdirSync(join(fx.sb.ws, 'sub'), { recursive: true });
  const agents = Array.from({ length: 8 }, (_, i) => ({ name: `a${i}`, task: `QUICK-TASK part ${i}` }));
  agents[1].effort = effort;
  agents[2].tool_approval = 'ask';
  agents[3].cwd = 'sub'; // relative to the file
  agents[4].idle_timeout = 600;
  const good = { name: 'audit', parallelism: 3, defaults: { tool_approval: 'auto', keep_alive: true }, agents };
  const before = (await tool(client, 'reasonix_list', { all: true })).sessions.length;

  // one bad entry: the whole file is refused, naming it, and no agent starts
  const bad = structuredClone(good);
  bad.agents[5].effort = 'extreme';
  bad.agents[6].colour = 'blue';
  writeFileSync(join(fx.sb.ws, 'bad.json'), JSON.stringify(bad));
  const r1 = await callTool(client, 'reasonix_spawn_fleet', { path: 'bad.json' });
  assert.equal(r1.result.isError, true);
  const msg = r1.result.content[0].text;
  assert.match(msg, /rejected whole/);
  assert.match(msg, /agents\[7\]: unknown field colour/, msg);
  writeFileSync(join(fx.sb.ws, 'bad.json'), JSON.stringify({ ...bad, agents: good.agents.map((a, i) => (i === 5 ? { ...a, effort: 'extreme' } : a)) }));
  const r2 = await callTool(client, 'reasonix_spawn_fleet', { path: join(fx.sb.ws, 'bad.json') });
  assert.equal(r2.result.isError, true);
  assert.match(r2.result.content[0].text, /agents\[6\] \(a5\): effort must be one of/);
  writeFileSync(join(fx.sb.ws, 'bad.json'), JSON.stringify({ ...good, agents: good.agents.map((a, i) => (i === 7 ? { ...a, model: 'mock/nope' } : a)) }));
  const r3 = await callTool(client, 'reasonix_spawn_fleet', { path: 'bad.json' });
  assert.equal(r3.result.isError, true);
  assert.match(r3.result.content[0].text, /agents\[8\] \(a7\): model mock\/nope is not offered/);
  writeFileSync(join(fx.sb.ws, 'bad.json'), JSON.stringify({ agents: Array.from({ length: 65 }, (_, i) => `QUICK-TASK ${i}`) }));
  const r4 = await callTool(client, 'reasonix_spawn_fleet', { path: 'bad.json' });
  assert.match(r4.result.content[0].text, /65 agents: at most 64/);
  assert.equal((await tool(client, 'reasonix_list', { all: true })).sessions.length, before, 'no session from a rejected file');
  await until(() => agentProcesses(fx.sb).length === 0, 5000, 'no agent process from a rejected file (the models query\'s gone)');

  writeFileSync(join(fx.sb.ws, 'fleet.json'), JSON.stringify(good));
  const t0 = Date.now();
  const f = await tool(client, 'reasonix_spawn_fleet', { path: 'fleet.json' });
  console.log(`# spawn_fleet of 8 agents (parallelism 3) answered in ${Date.now() - t0} ms`);
  assert.equal(f.name, 'audit');
  assert.equal(f.spawned, 8);
  assert.equal(f.failed, 0);
  assert.deepEqual(f.results.map((r) => r.name), agents.map((a) => a.name), 'results in file order');
  assert.equal(f.session_ids.length, 8);
  assert.equal(f.results[3].cwd, join(fx.sb.ws, 'sub'));
  assert.equal(f.shared_workspaces.length, 1, JSON.stringify(f.shared_workspaces));
  assert.deepEqual(f.shared_workspaces[0].agents, ['a0', 'a1', 'a2', 'a4', 'a5', 'a6', 'a7']);

  const done = await watchAll(client, f.session_ids);
  for (const id of f.session_ids) assert.match(done[id].message, /quick done/);
  const rows = Object.fromEntries((await tool(client, 'reasonix_list', { detail: true })).sessions.map((s) => [s.session_id, s]));
  const row = (i) => rows[f.session_ids[i]];
  assert.equal(row(1).effort, effort, 'per-agent override');
  assert.equal(row(2).tool_approval, 'ask', 'per-agent override');
  assert.equal(row(0).tool_approval, 'auto', 'the defaults');
  assert.equal(row(0).keep_alive, true, 'the defaults');
  assert.equal(row(4).idle_timeout, 600);
  for (const id of f.session_ids) await tool(client, 'reasonix_stop', { session_id: id });
});

test('configure: idle at once, in a turn before the next, exited at the resume', async () => {
  const { client } = await fx.connect({ name: 'configure' });
  const effort = await otherEffort(client);
  const none = await callTool(client, 'reasonix_configure', { session_id: 'rx-000000000000', effort });
  assert.equal(none.result.isError, true);

  // idle: set on the agent now
  const { session_id: idle } = await tool(client, 'reasonix_spawn', { task: 'QUICK-TASK one', keep_alive: true });
  await watchAll(client, [idle]);
  const empty = await callTool(client, 'reasonix_configure', { session_id: idle });
  assert.match(empty.result.content[0].text, /at least one of model, effort, work_mode, tool_approval/);
  const c1 = await tool(client, 'reasonix_configure', { session_id: idle, effort, work_mode: 'economy' });
  assert.equal(c1.applies, 'now');
  assert.deepEqual(c1.applied, { effort });
  assert.match(c1.skipped.work_mode, /advertises no such option/, 'this agent has no work_mode: skipped as a spawn skips it');
  assert.equal(c1.queued, undefined);
  assert.ok(Object.values(c1.agent_config).includes(effort), `the agent reports it: ${JSON.stringify(c1.agent_config)}`);
  const refused = await callTool(client, 'reasonix_configure', { session_id: idle, model: 'mock/nope' });
  assert.equal(refused.result.isError, true);
  assert.match(refused.result.content[0].text, /not offered by the agent/);

  // in a turn: queued, shown apart from what the agent reports, set when the turn ends
  const { session_id: busy } = await tool(client, 'reasonix_spawn', { task: 'HOLD-TASK two', keep_alive: true });
  const c2 = await tool(client, 'reasonix_configure', { session_id: busy, effort });
  assert.equal(c2.applies, 'next_turn');
  assert.deepEqual(c2.queued, { effort });
  assert.ok(!Object.values(c2.agent_config).includes(effort), 'not yet on the agent');
  await watchAll(client, [busy]);
  const after = (await tool(client, 'reasonix_list', { detail: true })).sessions.find((s) => s.session_id === busy);
  assert.deepEqual(after.queued_config, { effort }, 'waits for the next turn');
  // the next turn runs with it: the model request carries the effort
  await tool(client, 'reasonix_send', { session_id: busy, message: 'QUICK-TASK next turn' });
  await watchAll(client, [busy]);
  const p = await tool(client, 'reasonix_poll', { session_id: busy, detail: true });
  assert.ok(Object.values(p.config).includes(effort), JSON.stringify(p.config));
  const set = (await tool(client, 'reasonix_list', { detail: true })).sessions.find((s) => s.session_id === busy);
  assert.equal(set.effort, effort);
  assert.equal(set.queued_config, undefined);
  const reqs = (await fx.provider.requests()).filter((q) => JSON.stringify(q.body.messages).includes('next turn'));
  assert.equal(reqs.at(-1)?.body.reasoning_effort, effort, 'the turn after the queued configure used it');

  // exited: saved for the resume
  await tool(client, 'reasonix_stop', { session_id: busy });
  const c3 = await tool(client, 'reasonix_configure', { session_id: busy, tool_approval: 'ask' });
  assert.equal(c3.applies, 'at_resume');
  assert.deepEqual(c3.queued, { tool_approval: 'ask' });
  const r = await tool(client, 'reasonix_resume', { session_id: busy });
  assert.equal(r.tool_approval, 'ask', 'the saved option is set at the resume');
  assert.equal(r.effort, effort, 'the earlier one stays');

  // resume on a live session: idempotent
  const live = await tool(client, 'reasonix_resume', { session_id: busy });
  assert.equal(live.already_live, true);
  assert.equal(live.warnings, undefined);
  await tool(client, 'reasonix_stop', { session_id: busy });
  // resume with options changes them
  const r2 = await tool(client, 'reasonix_resume', { session_id: busy, tool_approval: 'auto', effort: 'max', work_mode: 'economy' });
  assert.equal(r2.tool_approval, 'auto');
  assert.equal(r2.effort, 'max');
  assert.deepEqual(r2.skipped_options, ['work_mode'], 'this agent has no work_mode option');
  const bad = await callTool(client, 'reasonix_resume', { session_id: busy, effort: 'extreme' });
  assert.match(bad.result.content[0].text, /effort must be one of/);
  await tool(client, 'reasonix_stop', { session_id: busy });
  await tool(client, 'reasonix_stop', { session_id: idle });
});

test('configure ask→yolo while a tool gate is pending allows that gate once', async () => {
  const { client } = await fx.connect({ name: 'configure-gate' });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'GATE-TASK write gate.txt', tool_approval: 'ask' });
  const w = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  assert.equal(w.results[sid].permission_request?.kind, 'permission', JSON.stringify(w.results[sid]));
  const c = await tool(client, 'reasonix_configure', { session_id: sid, tool_approval: 'yolo' });
  assert.equal(c.gates_allowed, 1);
  assert.equal(c.applies, 'next_turn');
  const done = await watchUntil(client, [sid], settled);
  assert.match(done[sid].message, /gate done/);
  assert.equal(readFileSync(join(fx.sb.ws, 'gate.txt'), 'utf8'), 'GATE\n');
  const row = (await tool(client, 'reasonix_list', { detail: true })).sessions.find((s) => s.session_id === sid);
  assert.deepEqual(row.queued_config, { tool_approval: 'yolo' }, 'set before the next turn');
  assert.ok(existsSync(join(fx.sb.ws, 'gate.txt')));
  await tool(client, 'reasonix_stop', { session_id: sid });
});
