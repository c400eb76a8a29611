// The README's registration as a host that passes its MCP servers almost no environment runs it
// (issue #13, item 1): Codex passes only HOME, PATH, USER, … — no REASONIX_BIN, REASONIX_HOME or
// REASONIX_MCP_HOME — so the server must find the agent installed beside it and its homes under
// HOME; `doctor` says what Codex would drop, and `reasonix-mcp setup codex` (README.md's line)
// carries it into the settings file.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, watchUntil, BIN, configToml, shutdownAgentd, connectClient, sandboxProcesses, until, execFileSync } from './helpers.mjs';

const scenario = { rules: [{ name: 'quick', last_role: 'user', user_contains: 'QUICK-TASK', text: 'registered reply' }] };
const fx = useFixture({ scenario });

// Exactly the variables Codex passes an MCP server (doctor.lua CODEX_PASSES), with a PATH that has no agent.
function codexEnv(home) {
  return { HOME: home, PATH: '/usr/local/bin:/usr/bin:/bin', USER: 'e2e', LOGNAME: 'e2e', SHELL: '/bin/sh', LANG: 'C.UTF-8', TERM: 'dumb', TMPDIR: '/tmp' };
}

test('a server with only the environment Codex passes finds the agent beside its install and runs a fleet', async () => {
  const home = join(fx.sb.root, 'codexhome');
  mkdirSync(join(home, '.reasonix'), { recursive: true });
  writeFileSync(join(home, '.reasonix', 'config.toml'), configToml(fx.provider.port));
  writeFileSync(join(home, '.reasonix', '.env'), 'MOCK_API_KEY=mock-key\n');
  const c = await connectClient(fx.sb, { env: codexEnv(home), name: 'codex-like-host' });
  try {
    const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'QUICK-TASK as registered', model: 'mock/mock-model' });
    const r = await watchUntil(c.client, [sid]);
    assert.equal(r[sid].stop_reason, 'end_turn', JSON.stringify(r[sid]));
    assert.match(r[sid].message, /registered reply/);
  } finally {
    await c.client.close();
    await shutdownAgentd({ mcp: join(home, '.reasonix-mcp'), ws: fx.sb.ws });
  }
  const mine = () => sandboxProcesses({ ...fx.sb, mcp: join(home, '.reasonix-mcp') }).filter((p) => / agentd$| acp/.test(p.cmd));
  await until(() => mine().length === 0, 10000, 'agentd and its agents gone');
});

test('doctor names the settings a Codex registration without --env loses and the agent Codex would run', () => {
  const env = { ...codexEnv(join(fx.sb.root, 'doctorhome')), REASONIX_HOME: fx.sb.rx, REASONIX_MCP_HOME: join(fx.sb.root, 'dm') };
  let out;
  try { out = execFileSync(BIN, ['doctor'], { env, encoding: 'utf8' }); } catch (e) { out = e.stdout; }
  assert.match(out, /host environment\s+Claude Code passes its whole environment; Codex passes only HOME/);
  assert.match(out, /lost unless registered with --env NAME=value or put in the settings file: REASONIX_HOME REASONIX_MCP_HOME/);
  assert.match(out, /under Codex the agent would be: \/\S+reasonix/);
});

test('the settings file reaches a server started with only the environment Codex passes, and its agents', async () => {
  const home = join(fx.sb.root, 'filehome');
  const mcp = join(fx.sb.root, 'fm');
  mkdirSync(join(home, '.reasonix'), { recursive: true });
  mkdirSync(join(home, '.config', 'reasonix-mcp'), { recursive: true });
  writeFileSync(join(home, '.reasonix', 'config.toml'), configToml(fx.provider.port));
  writeFileSync(join(home, '.reasonix', '.env'), 'MOCK_API_KEY=mock-key\n');
  writeFileSync(join(home, '.config', 'reasonix-mcp', 'env'),
    `# reasonix-mcp settings for every host\nREASONIX_MCP_HOME=${mcp}\nREASONIX_MCP_DEFAULT_MODEL=mock/mock-model\n`);
  const c = await connectClient(fx.sb, { env: codexEnv(home), name: 'codex-like-host' });
  try {
    const spawned = await tool(c.client, 'reasonix_spawn', { task: 'QUICK-TASK with settings from the file' });
    assert.equal(spawned.model, 'mock/mock-model', 'the default model came from the file');
    assert.ok(existsSync(join(mcp, 'agentd.sock')), 'agentd runs in the REASONIX_MCP_HOME the file names');
    const r = await watchUntil(c.client, [spawned.session_id]);
    assert.match(r[spawned.session_id].message, /registered reply/);
    const out = execFileSync(BIN, ['doctor'], { env: codexEnv(home), encoding: 'utf8' });
    assert.match(out, /settings file \S+\/filehome\/\.config\/reasonix-mcp\/env sets REASONIX_MCP_HOME REASONIX_MCP_DEFAULT_MODEL/);
  } finally {
    await c.client.close();
    await shutdownAgentd({ mcp, ws: fx.sb.ws });
  }
  const mine = () => sandboxProcesses({ ...fx.sb, mcp }).filter((p) => / agentd$| acp/.test(p.cmd));
  await until(() => mine().length === 0, 10000, 'agentd and its agents gone');
});

test('setup codex carries the shell\'s REASONIX settings Codex drops; the server its config names, with only Codex\'s environment, runs with them', async () => {
  const home = join(fx.sb.root, 'setuphome');
  const rx = join(fx.sb.root, 'setup-rx');
  const mcp = join(fx.sb.root, 'setup-mcp');
  mkdirSync(join(home, 'empty'), { recursive: true });
  mkdirSync(rx, { recursive: true });
  writeFileSync(join(rx, 'config.toml'), configToml(fx.provider.port));
  writeFileSync(join(rx, '.env'), 'MOCK_API_KEY=mock-key\n');
  // the user's shell: settings of their own; no codex on PATH, so setup writes Codex's config itself
  const shell = { HOME: home, PATH: join(home, 'empty'), REASONIX_HOME: rx, REASONIX_MCP_HOME: mcp, REASONIX_MCP_DASHBOARD_AUTOSTART: '0' };
  const out = execFileSync(BIN, ['setup', 'codex'], { env: shell, encoding: 'utf8' });
  assert.match(out, new RegExp(`add REASONIX_HOME=${rx} REASONIX_MCP_DASHBOARD_AUTOSTART=0 REASONIX_MCP_HOME=${mcp}\n`));
  assert.match(out, /\[ok  \] host environment .*\n\s+the settings file has every REASONIX\* setting here: Codex loses none\n/, 'doctor, run by setup, sees nothing lost');
  const toml = readFileSync(join(home, '.codex', 'config.toml'), 'utf8');
  const command = JSON.parse(/^command = (".*")$/m.exec(toml)[1]);
  assert.equal(command, BIN, 'Codex runs this binary');
  const c = await connectClient(fx.sb, { env: codexEnv(home), name: 'codex-like-host', args: [] });
  try {
    const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'QUICK-TASK after setup', model: 'mock/mock-model' });
    assert.ok(existsSync(join(mcp, 'agentd.sock')), 'agentd runs in the REASONIX_MCP_HOME setup carried');
    const r = await watchUntil(c.client, [sid]);
    assert.match(r[sid].message, /registered reply/, 'the agent used the REASONIX_HOME setup carried');
  } finally {
    await c.client.close();
    await shutdownAgentd({ mcp, ws: fx.sb.ws });
  }
  const mine = () => sandboxProcesses({ ...fx.sb, mcp }).filter((p) => / agentd$| acp/.test(p.cmd));
  await until(() => mine().length === 0, 10000, 'agentd and its agents gone');
});
