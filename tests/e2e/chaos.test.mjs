// Confinement and death (the spec's selftest_chaos.py): spawn cwd must be the project dir, a subdir
// or an allow_write dir (symlinks resolved; REASONIX_MCP_ALLOW_ANY_CWD=1 lifts it); agents carry
// PDEATHSIG, so a killed agentd takes its agents with it and the sessions come back as resumable.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, callTool, watchUntil, agentdPid, agentProcesses, alive, until, shutdownAgentd, writeConfig } from './helpers.mjs';

const scenario = { rules: [{ name: 'quick', last_role: 'user', user_contains: 'QUICK-TASK', text: 'quick' }] };

let allowed;
const fx = useFixture({ scenario }, (fx) => {
  allowed = join(fx.sb.root, 'allowed');
  mkdirSync(allowed);
  mkdirSync(join(fx.sb.ws, 'sub'));
  mkdirSync(join(fx.sb.root, 'outside'));
  symlinkSync(join(fx.sb.root, 'outside'), join(fx.sb.ws, 'escape'));
  writeConfig(fx.sb, fx.provider.port, { extraToml: `[sandbox]\nallow_write = [${JSON.stringify(allowed)}]` });
});

test('spawn cwd is confined to the project dir and the allow_write dirs', async () => {
  const { client } = await fx.connect({ name: 'confined' });
  for (const cwd of ['/', '/tmp', join(fx.sb.root, 'outside'), 'escape', '../outside']) {
    const r = await callTool(client, 'reasonix_spawn', { task: 'QUICK-TASK escape', cwd });
    assert.equal(r.result.isError, true, `cwd ${cwd} must be refused`);
    assert.match(r.result.content[0].text, /outside the project dir .*allow_write.*REASONIX_MCP_ALLOW_ANY_CWD/, cwd);
  }
  const sub = await tool(client, 'reasonix_spawn', { task: 'QUICK-TASK in a subdir', cwd: 'sub' });
  assert.equal(sub.cwd, realpathSync(join(fx.sb.ws, 'sub')));
  const extra = await tool(client, 'reasonix_spawn', { task: 'QUICK-TASK in allow_write', cwd: allowed });
  assert.equal(extra.cwd, realpathSync(allowed));
  await watchUntil(client, [sub.session_id, extra.session_id]);
  await tool(client, 'reasonix_stop', { session_id: sub.session_id });
  await tool(client, 'reasonix_stop', { session_id: extra.session_id });
  const list = await tool(client, 'reasonix_list', { all: true });
  assert.equal(list.sessions.length, 2, 'refused spawns leave nothing behind');
});

test('a killed agentd takes its agents with it (PDEATHSIG); sessions come back resumable', async () => {
  const { client } = await fx.connect({ name: 'deathsig' });
  const ids = [];
  for (let i = 0; i < 2; i++) ids.push((await tool(client, 'reasonix_spawn', { task: `QUICK-TASK ${i}`, keep_alive: true })).session_id);
  await watchUntil(client, ids);
  const daemon = agentdPid(fx.sb);
  const agents = agentProcesses(fx.sb);
  assert.equal(agents.length, 2);
  assert.ok(agents.every((a) => a.ppid === daemon), 'agents are children of agentd');
  process.kill(daemon, 'SIGKILL');
  await until(() => agents.every((a) => !alive(a.pid)), 5000, 'agents die with agentd');
  const list = await tool(client, 'reasonix_list', {});
  for (const sid of ids) {
    const row = list.sessions.find((s) => s.session_id === sid);
    assert.ok(['orphaned', 'exited'].includes(row?.status), JSON.stringify(row));
  }
  assert.notEqual(agentdPid(fx.sb), daemon, 'the next call started a fresh agentd');
  const back = await tool(client, 'reasonix_resume', { session_id: ids[0] });
  assert.equal(back.session_id, ids[0]);
  await tool(client, 'reasonix_stop', { session_id: ids[0] });
});

test('REASONIX_MCP_ALLOW_ANY_CWD=1 lifts the confinement', async () => {
  await shutdownAgentd(fx.sb);
  const { client } = await fx.connect({ name: 'anywhere', env: fx.env({ REASONIX_MCP_ALLOW_ANY_CWD: '1' }) });
  const r = await tool(client, 'reasonix_spawn', { task: 'QUICK-TASK outside', cwd: join(fx.sb.root, 'outside') });
  assert.equal(r.cwd, realpathSync(join(fx.sb.root, 'outside')));
  await watchUntil(client, [r.session_id]);
  await tool(client, 'reasonix_stop', { session_id: r.session_id });
});
