// A binary upgrade from the host's side: replacing the installed file (cp + mv) swaps the MCP server
// (launcher) and reloads agentd, which waits until the running turn's result reached the host's
// watch, then hands over to a fresh daemon from the new file; the host's next calls (list, resume,
// a new turn) reach it without any help. With REASONIX_MCP_LIVE_HANDOVER=1 the same upgrade keeps
// the daemon's pid and the agent process, even mid-turn. No process may be left.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, chmodSync, renameSync, readlinkSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { useFixture, tool, withTimeout, until, alive, agentdPid, agentProcesses, watchUntil, shutdownAgentd, BIN } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'hold', last_role: 'user', user_contains: 'HOLD-TASK', delay_first: 2, text: 'held reply' },
    { name: 'again', last_role: 'user', user_contains: 'AGAIN', text: 'again fine' },
  ],
};

const fx = useFixture({ scenario });

// Copies the build's binary to a private install path the test can upgrade.
function install(name) {
  const exe = join(fx.sb.bin, name);
  copyFileSync(BIN, exe);
  chmodSync(exe, 0o755);
  return exe;
}

// Upgrades exe the way an installer does: the new file under a temp name, renamed over it.
function upgrade(exe) {
  const tmp = `${exe}.new`;
  copyFileSync(BIN, tmp);
  chmodSync(tmp, 0o755);
  renameSync(tmp, exe);
}

// An SDK client on the launcher at exe (the command hosts register).
async function connect(t, exe, env) {
  const transport = new StdioClientTransport({ command: exe, args: [], env, cwd: fx.sb.ws, stderr: 'pipe' });
  const client = new Client({ name: 'upgrade-e2e', version: '1.0.0' }, { capabilities: {} });
  await withTimeout(client.connect(transport), 15000, 'MCP initialize through the launcher');
  t.after(() => client.close().catch(() => {}));
  return client;
}

test('an upgrade swaps the server and, once the running turn was delivered, reloads agentd; the host just goes on', async (t) => {
  const exe = install('reasonix-mcp');
  const client = await connect(t, exe, fx.env({ REASONIX_MCP_RELOAD_GRACE_MS: '100' }));
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'HOLD-TASK survive the upgrade' });
  const oldDaemon = agentdPid(fx.sb);
  assert.equal(readlinkSync(`/proc/${oldDaemon}/exe`), exe);
  const watch = tool(client, 'reasonix_watch', { session_ids: [sid] });
  const t0 = Date.now();
  upgrade(exe);
  const res = await withTimeout(watch, 60000, 'the watch answered across the upgrade');
  assert.equal(res.results[sid].stop_reason, 'end_turn');
  assert.equal(res.results[sid].message, 'held reply');
  await until(() => !alive(oldDaemon), 10000, 'the old agentd handed over');
  const reloadMs = Date.now() - t0;
  const row = (await tool(client, 'reasonix_list', { all: true })).sessions.find((s) => s.session_id === sid);
  assert.equal(row.status, 'exited');
  assert.equal(row.exit_reason, 'daemon_reload');
  const fresh = agentdPid(fx.sb);
  assert.ok(fresh && fresh !== oldDaemon, 'a fresh agentd');
  assert.equal(readlinkSync(`/proc/${fresh}/exe`), exe, 'running the new file');
  assert.equal((await tool(client, 'reasonix_resume', { session_id: sid })).status, 'idle');
  await tool(client, 'reasonix_send', { session_id: sid, message: 'AGAIN please' });
  const again = await watchUntil(client, [sid]);
  assert.equal(again[sid].message, 'again fine');
  await tool(client, 'reasonix_stop', { session_id: sid });
  t.diagnostic(`rename -> turn delivered and fresh agentd up in ${reloadMs} ms (the turn itself takes ~2 s)`);
});

test('with live handover an upgrade mid-turn keeps the agentd pid and the agent, and the watch gets the whole turn', async (t) => {
  await shutdownAgentd(fx.sb); // the daemon of the previous case: ours must start from this install
  const exe = install('reasonix-mcp-live');
  const client = await connect(t, exe, fx.env({ REASONIX_MCP_RELOAD_GRACE_MS: '100', REASONIX_MCP_LIVE_HANDOVER: '1' }));
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'HOLD-TASK live through the upgrade' });
  const daemon = agentdPid(fx.sb);
  assert.equal(readlinkSync(`/proc/${daemon}/exe`), exe);
  const agents = agentProcesses(fx.sb).map((p) => p.pid);
  const watch = tool(client, 'reasonix_watch', { session_ids: [sid] });
  const t0 = Date.now();
  upgrade(exe);
  const ino = statSync(exe).ino;
  await until(() => statSync(`/proc/${daemon}/exe`).ino === ino, 10000, 'agentd to re-execute the new file');
  const execMs = Date.now() - t0;
  const res = await withTimeout(watch, 60000, 'the watch answered across the live handover');
  assert.equal(res.results[sid].stop_reason, 'end_turn');
  assert.equal(res.results[sid].message, 'held reply');
  assert.equal(agentdPid(fx.sb), daemon, 'same daemon pid');
  assert.deepEqual(agentProcesses(fx.sb).map((p) => p.pid), agents, 'same agent process');
  await tool(client, 'reasonix_stop', { session_id: sid });
  t.diagnostic(`rename -> agentd re-executed with its agent in ${execMs} ms, mid-turn`);
});
