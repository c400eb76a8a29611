// The real hosts (Claude Code, Codex CLI, pinned in tests/hosts/package.json) in private homes,
// registered exactly as README.md says (`reasonix-mcp setup HOST`, the host on PATH), pointed at the scripted model API, each run in its own
// process group; the real agent runs on the offline provider. Teardown kills the host's group,
// shuts down the home's agentd and checks that nothing is left.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { REPO, BIN, RUN_ID, makeSandbox, configToml, startProvider, shutdownAgentd, waitNoLeftovers, killLeftovers,
  removeSandbox, withTimeout } from '../e2e/helpers.mjs';
import { startScriptedApi } from './scripted_api.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const HOST_BIN = { claude: join(here, 'node_modules', '.bin', 'claude'), codex: join(here, 'node_modules', '.bin', 'codex') };

// The registration line README.md gives for host, in a fenced block: `reasonix-mcp setup HOST`, as
// argv for the build's binary.
function readmeRegistration(host) {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const fenced = [...readme.matchAll(/^```[^\n]*\n([\s\S]*?)^```$/gm)].flatMap((m) => m[1].split('\n'));
  const line = fenced.find((l) => l.trim() === `reasonix-mcp setup ${host}`);
  assert.ok(line, `README.md has a fenced \`reasonix-mcp setup ${host}\` line`);
  return line.trim().split(/\s+/).slice(1);
}

// Runs `reasonix-mcp ARGS` (setup) as a user would in the host's environment, the host on PATH;
// returns its output, failing with it when it does not exit 0.
function runSetup(fx, args) {
  const env = { ...fx.env, PATH: `${dirname(HOST_BIN[fx.host])}:${fx.env.PATH}` };
  try {
    return execFileSync(BIN, args, { env, cwd: fx.sb.ws, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    assert.fail(`reasonix-mcp ${args.join(' ')} exited ${e.status}\n${e.stdout}\n${e.stderr}`);
  }
}

// What setup --remove must leave as it was: Codex's config.toml byte for byte (Codex's own `mcp add`
// and `mcp remove` keep every other byte); Claude Code's user-scope servers (Claude Code keeps its
// own state in the same file, and its `mcp remove` leaves an empty mcpServers).
function hostConfig(fx) {
  if (fx.host === 'codex') return readFileSync(join(fx.env.CODEX_HOME, 'config.toml'), 'utf8');
  let servers = {};
  try { servers = JSON.parse(readFileSync(join(fx.env.CLAUDE_CONFIG_DIR, '.claude.json'), 'utf8')).mcpServers ?? {}; } catch { /* none yet */ }
  return JSON.stringify(servers);
}

// The environment a host runs with: private homes, the scripted API, no reasonix settings at all
// (the registration must work without them), and the test marker.
function hostEnv(host, sb, api) {
  const env = { PATH: process.env.PATH, HOME: sb.home, LANG: 'C.UTF-8', TMPDIR: '/tmp', USER: 'e2e', TERM: 'dumb', RMCP_E2E_RUN: RUN_ID };
  if (host === 'claude') {
    Object.assign(env, { CLAUDE_CONFIG_DIR: join(sb.home, '.claude'), ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: 'scripted-key',
      DISABLE_AUTOUPDATER: '1', DISABLE_TELEMETRY: '1', DISABLE_ERROR_REPORTING: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' });
  } else {
    Object.assign(env, { CODEX_HOME: join(sb.home, '.codex'), SCRIPTED_API_KEY: 'scripted-key' });
  }
  return env;
}

// Codex's config: the scripted API as its model provider, no approvals, nothing online.
function codexConfig(api) {
  return [
    'model = "scripted"', 'model_provider = "scripted"', 'approval_policy = "never"', 'sandbox_mode = "workspace-write"',
    '[model_providers.scripted]', 'name = "scripted"', `base_url = "${api.url}/v1"`, 'wire_api = "responses"',
    'env_key = "SCRIPTED_API_KEY"', 'request_max_retries = 0', 'stream_max_retries = 0', '',
  ].join('\n');
}

// Sets up a host test file: sandbox, provider (scenario), scripted API, the README registration;
// returns the fixture ({sb, api, provider, run(prompt), ...}), filled in once `before` ran.
export function useHost(host, scenario) {
  const fx = { host, runs: [] };
  before(async () => {
    const sb = makeSandbox();
    // the homes a user has by default: HOME/.reasonix and HOME/.reasonix-mcp
    sb.rx = join(sb.home, '.reasonix');
    sb.mcp = join(sb.home, '.reasonix-mcp');
    mkdirSync(sb.rx, { recursive: true, mode: 0o700 });
    fx.sb = sb;
    fx.provider = await startProvider(sb, scenario);
    writeFileSync(join(sb.rx, 'config.toml'), configToml(fx.provider.port));
    writeFileSync(join(sb.rx, '.env'), 'MOCK_API_KEY=mock-key\n', { mode: 0o600 });
    // the settings file every host's server reads: no dashboard on the shared default port
    mkdirSync(join(sb.home, '.config', 'reasonix-mcp'), { recursive: true, mode: 0o700 });
    writeFileSync(join(sb.home, '.config', 'reasonix-mcp', 'env'), 'REASONIX_MCP_DASHBOARD_AUTOSTART=0\n', { mode: 0o600 });
    fx.api = await startScriptedApi();
    fx.env = hostEnv(host, sb, fx.api);
    if (host === 'codex') {
      mkdirSync(fx.env.CODEX_HOME, { recursive: true });
      writeFileSync(join(fx.env.CODEX_HOME, 'config.toml'), codexConfig(fx.api));
    } else {
      mkdirSync(fx.env.CLAUDE_CONFIG_DIR, { recursive: true });
    }
    fx.configBefore = hostConfig(fx);
    fx.setupOutput = runSetup(fx, readmeRegistration(host));
  });
  after(async () => {
    for (const r of fx.runs) r.kill();
    await shutdownAgentd(fx.sb).catch(() => false);
    await fx.provider.stop();
    await fx.api.close();
    const left = await waitNoLeftovers(10000, fx.sb);
    killLeftovers(fx.sb);
    removeSandbox(fx.sb);
    assert.deepEqual(left, [], 'no process of this test may be left');
  });
  // Runs the host once, non-interactively, with prompt; resolves {code, signal, stdout, stderr, ms}.
  // resume (Codex): a conversation id, or 'last', to continue instead of starting a new one.
  // The handle (fx.runs) can kill its process group early.
  fx.run = (prompt, { timeoutMs = 90000, resume } = {}) => {
    const again = resume === 'last' ? ['resume', '--last'] : resume ? ['resume', resume] : [];
    const args = host === 'claude'
      ? ['-p', prompt, '--allowedTools', 'mcp__reasonix', '--output-format', 'text']
      : ['exec', '--skip-git-repo-check', '--color', 'never', ...again, prompt];
    const t0 = Date.now();
    const child = spawn(HOST_BIN[host], args, { env: fx.env, cwd: fx.sb.ws, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const out = { stdout: '', stderr: '' };
    child.stdout.on('data', (d) => { out.stdout += d; });
    child.stderr.on('data', (d) => { out.stderr += d; });
    const kill = () => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } };
    fx.runs.push({ kill });
    const done = once(child, 'exit').then(([code, signal]) => ({ code, signal, ...out, ms: Date.now() - t0 }));
    const result = withTimeout(done, timeoutMs, `${host} run`).finally(kill);
    return { child, kill, result };
  };
  // Runs `reasonix-mcp setup ARGS…` as the registration did; returns its output.
  fx.setup = (args) => runSetup(fx, ['setup', ...args]);
  // The host's config as setup --remove must leave it (hostConfig).
  fx.hostConfig = () => hostConfig(fx);
  // Runs the host's own CLI (e.g. `mcp get`) in the private homes and parses its JSON output.
  fx.hostJson = (args) => JSON.parse(execFileSync(HOST_BIN[host], args, { env: fx.env, cwd: fx.sb.ws, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
  // agentd's view of the home's sessions, as a user sees it: `reasonix-mcp ctl --json list --all`.
  fx.ctlList = (orchestrator) => JSON.parse(execFileSync(BIN, ['ctl', '--orchestrator', orchestrator, '--json', 'list', '--all'],
    { env: { PATH: process.env.PATH, HOME: fx.sb.home, RMCP_E2E_RUN: RUN_ID }, encoding: 'utf8' }));
  return fx;
}

// Parses a tool result's text as the scripted API received it (structured JSON or a text block).
export function parseResult(prev) {
  assert.ok(prev, 'a tool result came back');
  try { return JSON.parse(prev.text); } catch { /* fall through */ }
  const m = /\{[\s\S]*\}/.exec(prev.text);
  return m ? JSON.parse(m[0]) : null;
}

export { withTimeout };
