// The MCP Inspector CLI against the server (tools/list, tools/call), and a host that passes only
// HOME, PATH, USER, SHELL and TERM: the agent is found on PATH and its config under HOME.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, watchUntil, BIN, configToml, agentOnPath, shutdownAgentd, connectClient, sandboxProcesses, until } from './helpers.mjs';

const run = promisify(execFile);
const INSPECTOR = new URL('./node_modules/.bin/mcp-inspector', import.meta.url).pathname;
const scenario = { rules: [{ name: 'quick', last_role: 'user', user_contains: 'QUICK-TASK', text: 'inspected reply' }] };

const fx = useFixture({ scenario });

// Runs the Inspector CLI on the server with args; returns the parsed JSON it prints.
async function inspector(...args) {
  const env = fx.env();
  const pass = [];
  for (const k of ['REASONIX_MCP_HOME', 'REASONIX_HOME', 'REASONIX_BIN', 'MOCK_API_KEY', 'RMCP_E2E_RUN',
    'REASONIX_MCP_DEFAULT_MODEL', 'REASONIX_MCP_DEFAULT_EFFORT']) pass.push('-e', `${k}=${env[k]}`);
  const { stdout } = await run(INSPECTOR, ['--cli', ...pass, BIN, 'server', ...args], {
    cwd: fx.sb.ws, env: { ...process.env, HOME: fx.sb.home }, timeout: 60000,
  });
  return JSON.parse(stdout);
}

test('Inspector CLI: tools/list and tools/call', async () => {
  const listed = await inspector('--method', 'tools/list');
  assert.equal(listed.tools.length, 17);
  assert.ok(listed.tools.every((t) => t.name.startsWith('reasonix_') && t.inputSchema.type === 'object'));

  const empty = await inspector('--method', 'tools/call', '--tool-name', 'reasonix_list');
  assert.deepEqual(empty.structuredContent, { counts: {}, sessions: [] });

  const spawned = await inspector('--method', 'tools/call', '--tool-name', 'reasonix_spawn', '--tool-arg', 'task=QUICK-TASK from the inspector');
  const sid = spawned.structuredContent.session_id;
  assert.match(sid, /\S/);
  // Each CLI run is a new server process; the same client name + workspace is the same orchestrator.
  const watched = await inspector('--method', 'tools/call', '--tool-name', 'reasonix_watch', '--tool-arg', `session_ids=["${sid}"]`);
  assert.match(watched.structuredContent.results[sid].message, /inspected reply/);
  const stopped = await inspector('--method', 'tools/call', '--tool-name', 'reasonix_stop', '--tool-arg', `session_id=${sid}`);
  assert.equal(stopped.structuredContent.status, 'exited');
});

test('a host passing only HOME, PATH, USER, SHELL and TERM gets a working fleet', async () => {
  await shutdownAgentd(fx.sb);
  const home = join(fx.sb.root, 'plainhome');
  mkdirSync(join(home, '.reasonix'), { recursive: true });
  writeFileSync(join(home, '.reasonix', 'config.toml'), configToml(fx.provider.port));
  writeFileSync(join(home, '.reasonix', '.env'), 'MOCK_API_KEY=mock-key\n');
  const env = { HOME: home, PATH: `${agentOnPath(fx.sb)}:${process.env.PATH}`, USER: 'e2e', SHELL: '/bin/sh', TERM: 'dumb' };
  const c = await connectClient(fx.sb, { env, name: 'plain-host' });
  try {
    const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'QUICK-TASK with a bare environment', model: 'mock/mock-model' });
    const r = await watchUntil(c.client, [sid]);
    assert.equal(r[sid].stop_reason, 'end_turn', JSON.stringify(r[sid]));
    assert.match(r[sid].message, /inspected reply/);
    await tool(c.client, 'reasonix_stop', { session_id: sid });
  } finally {
    await c.client.close();
    await shutdownAgentd({ mcp: join(home, '.reasonix-mcp'), ws: fx.sb.ws });
  }
  const mine = () => sandboxProcesses({ ...fx.sb, mcp: join(home, '.reasonix-mcp') }).filter((p) => / agentd$| acp/.test(p.cmd));
  await until(() => mine().length === 0, 10000, 'agentd and its agents gone');
});
