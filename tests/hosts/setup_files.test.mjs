// `reasonix-mcp setup all` where neither host is installed (no claude or codex on PATH): setup
// writes each host's config itself, next to what the user has there; the real hosts (pinned) then
// read that registration as their own — Claude Code starts the server and connects — and
// `setup --remove` takes it out again (and puts back the one it replaced), Codex's file byte for byte.
// needs: agent clients hosts
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { BIN, RUN_ID, makeSandbox, endSandbox, execFileSync } from '../e2e/helpers.mjs';

const HOSTS = join(process.cwd(), 'tests', 'hosts', 'node_modules', '.bin');
const sb = makeSandbox();
sb.mcp = join(sb.home, '.reasonix-mcp');
const env = { PATH: '/usr/bin:/bin', HOME: sb.home, LANG: 'C.UTF-8', TMPDIR: '/tmp', USER: 'e2e', TERM: 'dumb', RMCP_E2E_RUN: RUN_ID,
  CLAUDE_CONFIG_DIR: join(sb.home, '.claude'), CODEX_HOME: join(sb.home, '.codex'),
  DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' };

// What the user had before: another server in each host, settings of their own.
const CODEX_BEFORE = 'model = "o3"\n# mine\n\n[mcp_servers.other]\ncommand = "/bin/true"\n\n[mcp_servers.reasonix]\ncommand = "/old/reasonix-mcp"\n'
  + 'args = ["server"]\n\n[mcp_servers.reasonix.env]\nREASONIX_HOME = "/old/home"\n\n[profiles.fast]\nmodel = "mini"\n';
const CLAUDE_BEFORE = '{\n  "numStartups": 2,\n  "mcpServers": {\n    "other": {\n      "type": "stdio",\n      "command": "/bin/true",\n'
  + '      "args": [],\n      "env": {}\n    }\n  },\n  "tipsHistory": {"x": 1}\n}\n';
const codexFile = join(env.CODEX_HOME, 'config.toml');
const claudeFile = join(env.CLAUDE_CONFIG_DIR, '.claude.json');

after(async () => {
  assert.deepEqual(await endSandbox(sb), [], 'no process of this test may be left');
});

// Runs `reasonix-mcp setup ARGS…` with no host on PATH (an empty dir: a host installed on this
// machine is not found) unless path says otherwise; returns its output (its exit code is doctor's
// verdict, which needs a provider this test does not set up).
function setup(args, path = sb.bin) {
  try {
    return execFileSync(BIN, ['setup', ...args], { env: { ...env, PATH: path }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    return e.stdout + e.stderr;
  }
}

// Runs a host's own CLI in the private home.
const host = (name, args) => execFileSync(join(HOSTS, name), args, { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

test('setup all without the hosts on PATH writes configs the real hosts read; --remove takes our entries out', () => {
  mkdirSync(env.CODEX_HOME, { recursive: true });
  mkdirSync(env.CLAUDE_CONFIG_DIR, { recursive: true });
  mkdirSync(join(sb.home, '.config', 'reasonix-mcp'), { recursive: true });
  writeFileSync(join(sb.home, '.config', 'reasonix-mcp', 'env'), 'REASONIX_MCP_DASHBOARD_AUTOSTART=0\n');
  writeFileSync(codexFile, CODEX_BEFORE);
  writeFileSync(claudeFile, CLAUDE_BEFORE);
  const out = setup(['all']);
  assert.match(out, /write mcpServers\.reasonix \(claude is not on PATH\)/);
  assert.match(out, /write \[mcp_servers\.reasonix\] with tool_timeout_sec = 3600, default_tools_approval_mode = "approve" \(codex is not on PATH\)/);
  assert.match(out, /Codex \(.*\):\n {2}replacing the registration that runs \/old\/reasonix-mcp\n/);
  const written = readFileSync(codexFile, 'utf8');
  assert.ok(written.startsWith(CODEX_BEFORE.slice(0, CODEX_BEFORE.indexOf('[mcp_servers.reasonix]'))), 'the lines before ours are kept');
  assert.ok(written.endsWith('\n\n[profiles.fast]\nmodel = "mini"\n') && !written.includes('/old/'), written);

  const reg = JSON.parse(host('codex', ['mcp', 'get', 'reasonix', '--json']));
  assert.equal(reg.transport.command, BIN);
  assert.equal(reg.tool_timeout_sec, 3600);
  const claude = host('claude', ['mcp', 'get', 'reasonix']);
  assert.match(claude, /Scope: User config/);
  assert.match(claude, /Status: ✔ Connected/, claude);
  assert.ok(claude.includes(`Command: ${BIN}\n`), claude);
  assert.equal(JSON.parse(readFileSync(claudeFile, 'utf8')).mcpServers.reasonix.alwaysLoad, true, 'kept by Claude Code: loaded before the first turn');

  assert.match(setup(['all']), /Claude Code \(.*\):\n {2}already registered[\s\S]*Codex \(.*\):\n {2}already registered/);
  const removed = setup(['--remove']);
  assert.equal(readFileSync(codexFile, 'utf8'), CODEX_BEFORE, 'Codex\'s config as it was, byte for byte');
  const now = JSON.parse(readFileSync(claudeFile, 'utf8'));
  const before = JSON.parse(CLAUDE_BEFORE);
  assert.deepEqual(now.mcpServers, before.mcpServers, 'Claude Code\'s servers as they were');
  for (const k of Object.keys(before)) assert.deepEqual(now[k], before[k], `${k} as it was`);
  // Claude Code rewrote its file when it ran (its own state): only our entry was taken out
  assert.match(removed, /remove mcpServers\.reasonix \(the file changed since setup\)|remove the file|restore the file/);
});

test('with the hosts on PATH, a registration that runs something else is replaced by their commands and put back by --remove', () => {
  const withHosts = `${HOSTS}:/usr/bin:/bin`;
  rmSync(codexFile);
  rmSync(claudeFile);
  host('claude', ['mcp', 'add', 'reasonix', '--scope', 'user', '-e', 'OLD=1', '--', '/old/claude-server', 'x']);
  host('codex', ['mcp', 'add', 'reasonix', '--', '/old/codex-server']);
  const codexBefore = readFileSync(codexFile, 'utf8');
  const claudeBefore = JSON.parse(readFileSync(claudeFile, 'utf8')).mcpServers;
  const out = setup(['all'], withHosts);
  assert.match(out, /Claude Code \(.*\):\n {2}replacing the registration that runs \/old\/claude-server\n {2}run: claude mcp remove reasonix --scope user\n {2}run: claude mcp add-json reasonix --scope user '\{"type":"stdio",/);
  assert.match(out, /Codex \(.*\):\n {2}replacing the registration that runs \/old\/codex-server\n {2}run: codex mcp add reasonix -- /);
  assert.equal(JSON.parse(host('codex', ['mcp', 'get', 'reasonix', '--json'])).transport.command, BIN);
  const ours = JSON.parse(readFileSync(claudeFile, 'utf8')).mcpServers.reasonix;
  assert.equal(ours.command, BIN);
  assert.equal(ours.alwaysLoad, true, 'connected before the first turn');
  setup(['--remove'], withHosts);
  assert.equal(readFileSync(codexFile, 'utf8'), codexBefore, 'Codex\'s config as it was, byte for byte');
  assert.deepEqual(JSON.parse(readFileSync(claudeFile, 'utf8')).mcpServers, claudeBefore, 'the old Claude Code registration is back');
});

test('Claude Code connects the server setup registered before its first turn, however late the server starts', async () => {
  rmSync(claudeFile, { force: true });
  setup(['claude']);
  // the registration as setup wrote it, but its server starts 2 s late (a cold cache, a loaded machine)
  const slow = join(sb.bin, 'slow-reasonix-mcp');
  writeFileSync(slow, `#!/bin/sh\nsleep 2\nexec '${BIN}' "$@"\n`, { mode: 0o755 });
  const file = JSON.parse(readFileSync(claudeFile, 'utf8'));
  file.mcpServers.reasonix.command = slow;
  writeFileSync(claudeFile, JSON.stringify(file));
  // `claude -p` prints its init line (the servers and tools its first turn has) before the first
  // model request, which goes nowhere here: the run is ended once that line is read
  const child = spawn(join(HOSTS, 'claude'), ['-p', 'hi', '--output-format', 'stream-json', '--verbose'], {
    env: { ...env, ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', ANTHROPIC_API_KEY: 'unused' }, cwd: sb.ws,
    stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  let out = '';
  const first = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => { out += d; if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n'))); });
    child.on('exit', () => reject(new Error(`claude exited before its init line: ${out}`)));
    setTimeout(() => reject(new Error('no init line in 60 s')), 60000).unref();
  }).finally(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } });
  const init = JSON.parse(first);
  assert.deepEqual(init.mcp_servers.find((x) => x.name === 'reasonix'), { name: 'reasonix', status: 'connected', source: 'user' }, first);
  assert.ok(init.tools.includes('mcp__reasonix__reasonix_spawn'), first);
  setup(['--remove', 'claude']);
});
