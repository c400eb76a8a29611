// Shared pieces of the end-to-end suite: private homes, the offline provider, the server binary
// driven by the official MCP SDK client or over the raw wire, agentd shutdown and the leftover check.
// Writes the same config.toml as tests/support/reasonix_home.lua (for the mock provider, private HOME/REASONIX_HOME).
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, readlinkSync, rmSync, existsSync, symlinkSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
export const REPO = process.env.RMCP_SOURCE_DIR ? resolve(process.env.RMCP_SOURCE_DIR) : resolve(here, '..', '..');
export const BIN = process.env.RMCP_BIN ? resolve(process.env.RMCP_BIN) : join(REPO, 'build', 'reasonix-mcp');
export const PROVIDER_SCRIPT = join(REPO, 'tests', 'provider', 'mock_provider.py');
export const MOCK_MODEL = 'mock/mock-model';
const API_KEY_ENV = 'MOCK_API_KEY';

// Marks every process a test file starts (children inherit the environment) so leftovers can be found.
export const RUN_ID = `e2e-${process.pid}-${randomBytes(3).toString('hex')}`;

// The real agent binary: $REASONIX_BIN, else the pinned copy in <repo>/.agent.
export function agentBin() {
  if (process.env.REASONIX_BIN) return process.env.REASONIX_BIN;
  return join(REPO, '.agent', 'node_modules', '@reasonix', 'cli-linux-x64', 'bin', 'reasonix');
}

// A promise with a deadline: rejects with `what` when ms pass first.
export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms); }),
  ]);
}

// A private sandbox under /tmp (short: the agentd socket path must stay under 108 bytes):
// mcp/ (REASONIX_MCP_HOME), rx/ (REASONIX_HOME), home/ (HOME), ws/ (the project dir), bin/.
export function makeSandbox() {
  const root = mkdtempSync('/tmp/rxe-');
  const dirs = { root, mcp: join(root, 'mcp'), rx: join(root, 'rx'), home: join(root, 'home'), ws: join(root, 'ws'), bin: join(root, 'bin') };
  for (const d of ['rx', 'home', 'ws', 'bin']) mkdirSync(dirs[d], { recursive: true, mode: 0o700 });
  return dirs;
}

// TOML basic string (a JSON string is one).
const tomlStr = (s) => JSON.stringify(String(s));
const tomlValue = (v) => Array.isArray(v) ? `[${v.map(tomlValue).join(', ')}]` : (typeof v === 'string' ? tomlStr(v) : String(v));

// The config.toml that points the agent at the mock provider on 127.0.0.1:port (as reasonix_home.lua).
export function configToml(port, { model = MOCK_MODEL, models, provider = 'mock', modelOverrides = {}, extraToml = '' } = {}) {
  if (!models) {
    models = ['mock-model'];
    const bare = model.startsWith(provider + '/') ? model.slice(provider.length + 1) : null;
    if (bare && !models.includes(bare)) models.push(bare);
  }
  const lines = [
    '# Written by tests/e2e/helpers.mjs: the agent talks only to the local mock provider.',
    `default_model = ${tomlStr(model)}`,
    '',
    '[telemetry]',
    'cli_metrics = "off"',
    '',
    '[[providers]]',
    `name        = ${tomlStr(provider)}`,
    'kind        = "openai"',
    `base_url    = ${tomlStr(`http://127.0.0.1:${port}/v1`)}`,
    `models      = ${tomlValue(models)}`,
    `default     = ${tomlStr(models[0])}`,
    `api_key_env = ${tomlStr(API_KEY_ENV)}`,
  ];
  for (const [name, fields] of Object.entries(modelOverrides)) {
    lines.push('', `[providers.model_overrides.${tomlStr(name)}]`);
    for (const [k, v] of Object.entries(fields)) lines.push(`${k} = ${tomlValue(v)}`);
  }
  if (extraToml) lines.push('', extraToml.trim());
  return lines.join('\n') + '\n';
}

// The environment that swaps in the test seams (tests/support/seams.lua, run once as each
// reasonix-mcp process starts): clock, a file holding "now" that the test writes; fault, the name
// of a fault point that kills the process.
export function seamsEnv({ clock, fault } = {}) {
  return {
    REASONIX_MCP_TEST_SEAMS: join(REPO, 'tests', 'support', 'seams.lua'),
    ...(clock ? { RMCP_TEST_CLOCK: clock } : {}),
    ...(fault ? { RMCP_TEST_FAULT: fault } : {}),
  };
}

// Writes rx/config.toml for a provider port.
export function writeConfig(sb, port, opts) {
  writeFileSync(join(sb.rx, 'config.toml'), configToml(port, opts));
}

// The environment of a server under test: private homes, the mock key, the test marker.
// Spawn defaults point at the mock model so agents never reach a real provider. No dashboard starts
// by itself (tests run side by side; dashboard.test.mjs turns it on with its own port).
export function serverEnv(sb, extra = {}) {
  return {
    PATH: process.env.PATH,
    HOME: sb.home,
    REASONIX_HOME: sb.rx,
    REASONIX_MCP_HOME: sb.mcp,
    REASONIX_BIN: agentBin(),
    REASONIX_MCP_DEFAULT_MODEL: MOCK_MODEL,
    REASONIX_MCP_DEFAULT_EFFORT: 'auto',
    [API_KEY_ENV]: 'mock-key',
    LANG: 'C.UTF-8',
    TMPDIR: '/tmp',
    RMCP_E2E_RUN: RUN_ID,
    REASONIX_MCP_DASHBOARD_AUTOSTART: '0',
    ...extra,
  };
}

// Starts tests/provider/mock_provider.py with a scenario; resolves {port, url, requests(), setScenario(), stop()}.
export async function startProvider(sb, scenario = {}) {
  const file = join(sb.root, `scenario-${randomBytes(2).toString('hex')}.json`);
  writeFileSync(file, JSON.stringify(scenario));
  const child = spawn('python3', [PROVIDER_SCRIPT, '--port', '0', '--scenario', file, '--exit-on-stdin-eof'], {
    stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, RMCP_E2E_RUN: RUN_ID },
  });
  const exited = once(child, 'exit');
  let buf = '';
  const port = await withTimeout(new Promise((res, rej) => {
    child.stdout.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl >= 0) res(JSON.parse(buf.slice(0, nl)).port);
    });
    child.on('exit', (code) => rej(new Error(`mock provider exited (${code}) before reporting its port`)));
  }), 10000, 'mock provider port');
  const url = `http://127.0.0.1:${port}`;
  return {
    port, url, child,
    async requests(since = 0) { return (await fetch(`${url}/_mock/requests?since=${since}`)).json(); },
    async setScenario(s) { return (await fetch(`${url}/_mock/scenario`, { method: 'POST', body: JSON.stringify(s) })).json(); },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) { child.stdin.end(); child.kill('SIGTERM'); await exited; }
    },
  };
}

// Spawns the server binary; returns the SDK Client connected over stdio (with its transport and
// captured stderr). opts: env, cwd, name (clientInfo.name), elicit (handler) , args.
export async function connectClient(sb, { env, cwd, name = 'e2e-client', elicit, args = ['server'], capabilities } = {}) {
  const caps = capabilities ?? (elicit ? { elicitation: { form: {} } } : {});
  const transport = new StdioClientTransport({
    command: BIN, args, env: env ?? serverEnv(sb), cwd: cwd ?? sb.ws, stderr: 'pipe',
  });
  const stderr = [];
  transport.stderr?.on('data', (d) => stderr.push(String(d)));
  const client = new Client({ name, version: '1.0.0' }, { capabilities: caps });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  // agent events arrive as notifications/message {data: {text, event}}; tests wait on them.
  const events = [];
  const waiters = [];
  const messages = []; // every notifications/message params (reload warnings are level "warning")
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    messages.push(n.params);
    const ev = n.params?.data?.event;
    if (!ev) return;
    events.push(ev);
    for (const w of [...waiters]) if (w.pred(ev)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(ev); }
  });
  const waitEvent = (pred, ms = 60000, what = 'agent event') => {
    const seen = events.find(pred);
    if (seen) return Promise.resolve(seen);
    return withTimeout(new Promise((resolve) => waiters.push({ pred, resolve })), ms, what);
  };
  await withTimeout(client.connect(transport), 15000, 'MCP initialize');
  // routine agent events are info, below the server's default level: tests wait on them
  await client.setLoggingLevel('info');
  return { client, transport, stderr, events, messages, waitEvent, pid: transport.pid, close: () => client.close() };
}

// Watches ids until each has a result matching done(result) (default: a finished turn or exit);
// answers nothing, so a decision stops the loop too. Returns {sid: last result}.
export async function watchUntil(client, ids, done = (r) => r.status !== 'running' && r.status !== 'starting', opts = {}) {
  const out = {};
  let left = [...ids];
  while (left.length) {
    const data = await tool(client, 'reasonix_watch', { session_ids: left, ...opts });
    for (const [sid, r] of Object.entries(data.results || {})) {
      out[sid] = r;
      if (done(r)) left = left.filter((x) => x !== sid);
    }
  }
  return out;
}

// Per-file fixture: sandbox, offline provider with scenario, config.toml; teardown shuts agentd
// down, stops the provider and checks that no process of the file is left.
export async function fixture({ scenario = {}, config = {} } = {}) {
  const sb = makeSandbox();
  const provider = await startProvider(sb, scenario);
  writeConfig(sb, provider.port, config);
  const clients = [];
  const fx = {
    sb, provider,
    env: (extra) => serverEnv(sb, extra),
    async connect(opts = {}) {
      const c = await connectClient(sb, opts);
      clients.push(c);
      return c;
    },
    async teardown() {
      for (const c of clients) { try { await c.client.close(); } catch { /* already gone */ } }
      await shutdownAgentd(sb).catch(() => false);
      await provider.stop();
      return endSandbox(sb);
    },
  };
  return fx;
}

// Prints the last lines of sandbox sb's agentd log (the TAP reporter makes them comments): a failed
// test in CI then shows what agentd saw (agent exits, refusals) before the sandbox is removed. With
// RMCP_TEST_KEEP_LOG=<file> the whole log is copied there too (a flake hunted by a loop of runs).
export function printAgentdLog(sb, lines = 60) {
  const file = join(sb.mcp, 'agentd.log');
  if (!existsSync(file)) { console.log(`no agentd log at ${file}`); return; }
  const text = readFileSync(file, 'utf8');
  if (process.env.RMCP_TEST_KEEP_LOG) writeFileSync(process.env.RMCP_TEST_KEEP_LOG, text);
  const tail = text.trimEnd().split('\n').slice(-lines);
  console.log(`the last ${tail.length} lines of ${file}:\n${tail.map((l) => `  ${l}`).join('\n')}`);
}

// Sets up fixture(opts) before the file's tests (then runs setup(fx), if given) and tears it down
// after them, asserting that no process of the file is left; after a failed test it prints agentd's
// log. Returns the fixture (filled in once `before` ran).
export function useFixture(opts, setup) {
  const fx = {};
  before(async () => {
    Object.assign(fx, await fixture(opts));
    if (setup) await setup(fx);
  });
  afterEach((t) => { if (t.passed === false && fx.sb) printAgentdLog(fx.sb); });
  after(async () => {
    const left = await fx.teardown();
    assert.deepEqual(left, [], 'no process of this test may be left');
  });
  return fx;
}

// Calls a tool and returns {result, data}: data is structuredContent (or the parsed text block).
export async function callTool(client, name, args = {}, options = {}) {
  const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...options });
  let data = result.structuredContent;
  if (data === undefined && !result.isError && result.content?.[0]?.type === 'text') {
    try { data = JSON.parse(result.content[0].text); } catch { data = undefined; }
  }
  return { result, data };
}

// Like callTool but fails the test with the tool's own message when it returned isError.
export async function tool(client, name, args = {}, options = {}) {
  const { result, data } = await callTool(client, name, args, options);
  if (result.isError) throw new Error(`${name} returned isError: ${result.content?.[0]?.text}`);
  return data;
}

// A server on the raw wire: send(obj or string), next(pred) waits for a frame; frames keeps them all,
// lines their text as the server wrote it (lines[i] is frames[i]'s: the bytes a host gets). command
// (default the binary) runs with args on those pipes.
export function rawServer(sb, { env, cwd, args = ['server'], command = BIN } = {}) {
  const child = spawn(command, args, { env: env ?? serverEnv(sb), cwd: cwd ?? sb.ws, stdio: ['pipe', 'pipe', 'pipe'] });
  const frames = [];
  const lines = [];
  const badLines = [];
  const waiters = [];
  const stderr = [];
  let buf = '';
  child.stderr.on('data', (d) => stderr.push(String(d)));
  child.stdout.on('data', (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let msg;
      try { msg = JSON.parse(line); } catch { badLines.push(line); continue; }
      frames.push(msg);
      lines.push(line);
      for (const w of [...waiters]) {
        if (w.pred(msg)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(msg); }
      }
    }
  });
  const exited = once(child, 'exit');
  let nextId = 1000;
  const srv = {
    child, frames, lines, badLines, stderr, exited,
    send(msg) { child.stdin.write((typeof msg === 'string' ? msg : JSON.stringify(msg)) + '\n'); },
    next(pred, ms = 10000, what = 'frame') {
      const seen = frames.find(pred);
      if (seen) return Promise.resolve(seen);
      return withTimeout(new Promise((resolve) => waiters.push({ pred, resolve })), ms, what);
    },
    // Sends a request and resolves with its response frame.
    request(method, params, id = nextId++) {
      const msg = { jsonrpc: '2.0', id, method };
      if (params !== undefined) msg.params = params;
      srv.send(msg);
      return srv.next((m) => m.id === id && (('result' in m) || ('error' in m)), 30000, `response to ${method}`);
    },
    async initialize(params = {}) {
      const r = await srv.request('initialize', {
        protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-wire', version: '1' }, ...params,
      });
      srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return r;
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) { child.stdin.end(); await withTimeout(exited, 10000, 'server exit after stdin EOF'); }
    },
  };
  return srv;
}

// Checks a frame is a strict JSON-RPC 2.0 message (no extra keys, never result and error together).
export function strictEnvelope(m) {
  const keys = Object.keys(m).sort().join(',');
  if (m.jsonrpc !== '2.0') return `jsonrpc is ${m.jsonrpc}`;
  if ('method' in m) {
    const ok = keys === 'jsonrpc,method' || keys === 'jsonrpc,method,params' || keys === 'id,jsonrpc,method' || keys === 'id,jsonrpc,method,params';
    return ok ? null : `bad request/notification keys: ${keys}`;
  }
  if (keys === 'id,jsonrpc,result') return null;
  if (keys === 'error,id,jsonrpc') {
    const ek = Object.keys(m.error).sort().join(',');
    if (!Number.isInteger(m.error.code) || typeof m.error.message !== 'string') return 'bad error object';
    return (ek === 'code,message' || ek === 'code,data,message') ? null : `bad error keys: ${ek}`;
  }
  return `bad response keys: ${keys}`;
}

// Sends agentd `shutdown` over its socket (hello first); resolves when the daemon closed the connection.
export async function shutdownAgentd(sb) {
  const sock = join(sb.mcp, 'agentd.sock');
  if (!existsSync(sock)) return false;
  return withTimeout(new Promise((resolve) => {
    const c = createConnection(sock);
    let buf = '';
    c.on('error', () => resolve(false));
    c.on('close', () => resolve(true));
    c.on('connect', () => {
      c.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'hello', params: { protocol: 1, orchestrator_id: 'e2e-cleanup', project_dir: sb.ws, client: { name: 'e2e-cleanup', version: '1' } } }) + '\n');
    });
    c.on('data', (d) => {
      buf += d;
      if (buf.includes('"id":1') || buf.includes('"id": 1')) {
        buf = '';
        c.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'shutdown' }) + '\n');
      }
    });
  }), 15000, 'agentd shutdown');
}

// Processes (other than this test process) whose environment carries this run's marker, plus
// those of sandbox sb (a server started with a minimal environment carries no marker).
export function leftovers(sb) {
  const found = sb ? sandboxProcesses(sb) : [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const env = readFileSync(`/proc/${name}/environ`, 'latin1');
      if (!env.includes(`RMCP_E2E_RUN=${RUN_ID}`) || found.some((p) => p.pid === Number(name))) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      if (/^\d+ \(.*\) Z/.test(stat)) continue;
      found.push({ pid: Number(name), cmd: readFileSync(`/proc/${name}/cmdline`, 'latin1').replace(/\0/g, ' ').trim() });
    } catch { /* gone or not ours */ }
  }
  return found;
}

// Waits (bounded) until no marked process is left; processes exit asynchronously after a shutdown
// and are not our children, so /proc is checked on a short interval. Returns what is still alive.
export async function waitNoLeftovers(ms = 10000, sb) {
  const deadline = Date.now() + ms;
  let left = leftovers(sb);
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = leftovers(sb);
  }
  return left;
}

// Ends sandbox sb: its agentd shut down, what is left of its processes killed, its dirs removed.
// Returns the processes that were still alive after the wait (a test asserts there are none).
export async function endSandbox(sb) {
  await shutdownAgentd(sb).catch(() => false);
  const left = await waitNoLeftovers(10000, sb);
  killLeftovers(sb);
  removeSandbox(sb);
  return left;
}

// Kills whatever marked processes remain (last-resort cleanup so one failure does not leak into others).
export function killLeftovers(sb) {
  for (const p of leftovers(sb)) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
}

// Processes of this sandbox: [{pid, ppid, cmd}] whose environment has REASONIX_MCP_HOME=sb.mcp
// (the server, agentd and agents all inherit it) or whose cwd is inside the sandbox.
export function sandboxProcesses(sb) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const m = /^\d+ \(.*\) (\S) (\d+)/.exec(stat);
      if (!m || m[1] === 'Z') continue;
      const env = readFileSync(`/proc/${name}/environ`, 'latin1');
      let cwd = '';
      try { cwd = readlinkSync(`/proc/${name}/cwd`); } catch { /* not ours */ }
      if (!env.includes(`REASONIX_MCP_HOME=${sb.mcp}\0`) && !cwd.startsWith(sb.root + '/')) continue;
      found.push({ pid: Number(name), ppid: Number(m[2]), cmd: readFileSync(`/proc/${name}/cmdline`, 'latin1').replace(/\0/g, ' ').trim() });
    } catch { /* gone or not ours */ }
  }
  return found;
}

// The pid of this sandbox's running agentd, or null.
export function agentdPid(sb) {
  const p = sandboxProcesses(sb).find((x) => / agentd$/.test(x.cmd));
  return p ? p.pid : null;
}

// The agent processes (`reasonix acp`) agentd runs for this sandbox.
export function agentProcesses(sb) {
  return sandboxProcesses(sb).filter((x) => / acp( |$)/.test(x.cmd));
}

// True while pid exists and is not a zombie.
export function alive(pid) {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch { return false; }
}

// Waits (bounded, polling /proc: these are not our children) until pred() is true.
export async function until(pred, ms = 10000, what = 'condition') {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// Removes the sandbox.
export function removeSandbox(sb) {
  rmSync(sb.root, { recursive: true, force: true });
}

// A directory holding only a `reasonix` symlink to the agent, for PATH-only environments.
export function agentOnPath(sb) {
  const link = join(sb.bin, 'reasonix');
  if (!existsSync(link)) symlinkSync(agentBin(), link);
  return sb.bin;
}

export { execFileSync };
