// What opencode's ACP mode (`opencode acp`, npm opencode-ai, pinned in scripts/agents/opencode)
// does on the wire, seen from a bare ACP client over stdio (acp_stdio.mjs), offline against the
// scripted OpenAI Chat Completions provider (tests/provider/mock_provider.py): initialize,
// session/new, two turns, a file write behind session/request_permission, a message sent during a
// running turn, cancel, then session/load in a new process. Prints the NDJSON lines that matter and
// what the provider served. Run: node tests/e2e/opencode_acp.mjs (after npm ci --prefix
// .agent/opencode, see scripts/agents/opencode/package.json).
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAcp } from './acp_stdio.mjs';
import { createInterface } from 'node:readline';
import { once } from 'node:events';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, '..', '..');
export const VERSION = '1.18.33';
// The native binary of the platform package (what opencode-ai's bin/opencode.exe is a copy of).
export const AGENT = process.env.OPENCODE_BIN ?? join(REPO, '.agent', 'opencode', 'node_modules', 'opencode-linux-x64', 'bin', 'opencode');
const PROVIDER_SCRIPT = join(REPO, 'tests', 'provider', 'mock_provider.py');

// Starts the mock provider with a scenario; resolves {port, url, served(), requests(), stop()}.
export async function startProvider(scenario, env = {}) {
  const child = spawn('python3', [PROVIDER_SCRIPT, '--port', '0', '--exit-on-stdin-eof'], {
    stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...env },
  });
  const exited = once(child, 'exit');
  const [line] = await once(createInterface({ input: child.stdout }), 'line');
  const url = `http://127.0.0.1:${JSON.parse(line).port}`;
  const get = async (path) => (await fetch(url + path)).json();
  await fetch(`${url}/_mock/scenario`, { method: 'POST', body: JSON.stringify(scenario) });
  return {
    url, served: () => get('/_mock/served'), requests: (since = 0) => get(`/_mock/requests?since=${since}`),
    async stop() { if (child.exitCode === null && child.signalCode === null) { child.stdin.end(); child.kill('SIGTERM'); await exited; } },
  };
}

// opencode.json for a custom OpenAI-compatible provider "mock" at the provider's /v1: its only
// model the default (and the small one, used for titles), nothing fetched, shared or updated.
export function opencodeConfig(baseURL) {
  return {
    $schema: 'https://opencode.ai/config.json',
    model: 'mock/mock-model',
    small_model: 'mock/mock-model',
    enabled_providers: ['mock'],
    autoupdate: false,
    share: 'disabled',
    provider: {
      mock: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Mock',
        options: { baseURL, apiKey: '{env:MOCK_API_KEY}', includeUsage: true },
        models: { 'mock-model': { name: 'Mock Model', tool_call: true, limit: { context: 128000, output: 8192 } } },
      },
    },
  };
}

// A private home: HOME and the four XDG dirs under root, the config in $XDG_CONFIG_HOME/opencode,
// a workspace ws/. Returns {root, ws, env}.
export function makeHome(providerUrl, extraEnv = {}) {
  const root = mkdtempSync(join(tmpdir(), 'oc-acp-'));
  const d = (p) => { const full = join(root, p); mkdirSync(full, { recursive: true }); return full; };
  const cfgDir = d('config/opencode');
  writeFileSync(join(cfgDir, 'opencode.json'), JSON.stringify(opencodeConfig(`${providerUrl}/v1`), null, 2));
  const env = {
    PATH: process.env.PATH, HOME: d('home'), LANG: 'C.UTF-8',
    XDG_CONFIG_HOME: join(root, 'config'), XDG_DATA_HOME: d('data'), XDG_CACHE_HOME: d('cache'), XDG_STATE_HOME: d('state'),
    MOCK_API_KEY: 'mock-key',
    OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1', OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1', OPENCODE_DISABLE_SHARE: '1', OPENCODE_DISABLE_CLAUDE_CODE: '1',
    OPENCODE_DISABLE_EXTERNAL_SKILLS: '1',
    // every edit and command asks the client (session/request_permission); the default allows them
    OPENCODE_PERMISSION: JSON.stringify({ edit: 'ask', bash: 'ask' }),
    ...extraEnv,
  };
  return { root, ws: d('ws'), env, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

// Starts `opencode acp`; returns {request, notify, waitFor(pred), lines, permissions, close()}: lines
// is every NDJSON line it wrote; a session/request_permission is answered by answerPermission(params)
// (default: the allow_once option; none: cancelled), other requests are refused. close gives stdin
// EOF 3 s and resolves {code, signal, by: 'eof' | 'SIGTERM' | 'SIGKILL'}.
export function startAgent(env, cwd, { answerPermission } = {}) {
  const acp = startAcp(AGENT, ['acp'], env, cwd, { answerPermission });
  return { ...acp, waitFor: (pred, timeoutMs = 30000) => acp.next(pred, timeoutMs) };
}

export const INIT = { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } };
export const text = (t) => [{ type: 'text', text: t }];

// The scripted model: plain turns, a write tool call, a slow turn to cancel or steer into.
export const SCENARIO = {
  models: ['mock-model'],
  rules: [
    { name: 'title', any_contains: 'Generate a title', text: 'Title here', usage: { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 } },
    { name: 'one', last_role: 'user', user_contains: 'TURN-ONE', text: 'first answer', usage: { prompt_tokens: 1000, completion_tokens: 200, total_tokens: 1200, prompt_tokens_details: { cached_tokens: 300 } } },
    { name: 'two', last_role: 'user', user_contains: 'TURN-TWO', text: 'second answer', echo: 'all', usage: { prompt_tokens: 50, completion_tokens: 7, total_tokens: 57 } },
    { name: 'write', last_role: 'user', user_contains: 'WRITE-IT', tool_calls: [{ name: 'write', arguments: { filePath: 'WS/notes/hello.txt', content: 'line1\nline2\n' } }], usage: { prompt_tokens: 400, completion_tokens: 40, total_tokens: 440 } },
    { name: 'written', last_role: 'tool', last_tool_name: 'write', text: 'Wrote it.', usage: { prompt_tokens: 500, completion_tokens: 5, total_tokens: 505 } },
    { name: 'sleep', last_role: 'user', user_contains: 'SLEEPY', tool_calls: [{ name: 'bash', arguments: { command: 'sleep 3; echo slept', description: 'sleep' } }] },
    { name: 'after-sleep', last_role: 'tool', last_tool_name: 'bash', text: 'after sleep: ', echo: 'all' },
    { name: 'slow', last_role: 'user', user_contains: 'SLOW', text: 'x'.repeat(60), chunk: 2, delay: 0.1 },
    { name: 'steer', last_role: 'user', user_contains: 'STEER-ONE', text: 'steered ok' },
    { name: 'three', last_role: 'user', user_contains: 'TURN-THREE', text: 'third answer', echo: 'all' },
  ],
  default: { text: 'ok' },
};

const trim = (l, n = 400) => (l.length > n ? l.slice(0, n) + '…' : l);

async function main() {
  const prov = await startProvider(SCENARIO);
  const home = makeHome(prov.url);
  SCENARIO.rules.find((r) => r.name === 'write').tool_calls[0].arguments.filePath = join(home.ws, 'notes', 'hello.txt');
  await fetch(`${prov.url}/_mock/scenario`, { method: 'POST', body: JSON.stringify(SCENARIO) });
  const show = (label, lines, re = /./) => { console.log(`== ${label}`); for (const l of lines) if (re.test(l)) console.log('  ' + trim(l)); };
  let agent;
  try {
    const t0 = Date.now();
    agent = startAgent(home.env, home.ws);
    const init = await agent.request('initialize', INIT);
    console.log(`== initialize (${Date.now() - t0} ms)\n  ${JSON.stringify(init)}`);
    const ns = await agent.request('session/new', { cwd: home.ws, mcpServers: [] });
    console.log(`== session/new (${Date.now() - t0} ms)\n  ${trim(JSON.stringify(ns), 3000)}`);
    const { sessionId } = ns;
    for (const word of ['TURN-ONE', 'TURN-TWO']) {
      const from = agent.lines.length;
      const r = await agent.request('session/prompt', { sessionId, prompt: text(`${word} go`) });
      show(`${word} (${Date.now() - t0} ms) result ${JSON.stringify(r)}`, agent.lines.slice(from));
      console.log(`  served: ${JSON.stringify(await prov.served())}`);
    }
    let from = agent.lines.length;
    const w = await agent.request('session/prompt', { sessionId, prompt: text('WRITE-IT now') });
    show(`WRITE-IT result ${JSON.stringify(w)}; file: ${existsSync(join(home.ws, 'notes', 'hello.txt')) && JSON.stringify(readFileSync(join(home.ws, 'notes', 'hello.txt'), 'utf8'))}`, agent.lines.slice(from));
    from = agent.lines.length;
    const sleepy = agent.request('session/prompt', { sessionId, prompt: text('SLEEPY run it') });
    await agent.waitFor((m) => m.params?.update?.sessionUpdate === 'tool_call_update' && m.params.update.status === 'in_progress');
    const mid = agent.request('session/prompt', { sessionId, prompt: text('MIDTOOL message') }).then((r) => ({ r, at: Date.now() }), (e) => ({ e: e.message }));
    const sr = await sleepy; const sAt = Date.now();
    console.log(`== prompt during a tool: first ${JSON.stringify(sr)} at ${sAt}, second ${JSON.stringify(await mid)}`);
    show('lines', agent.lines.slice(from), /request_permission|"result"|"error"|user_message|agent_message/);
    console.log(`  permissions: ${agent.permissions.map((p) => p.line).join('\n  ')}`);
    from = agent.lines.length;
    const slow = agent.request('session/prompt', { sessionId, prompt: text('SLOW please') });
    await agent.waitFor((m) => m.params?.update?.sessionUpdate === 'agent_message_chunk');
    const second = agent.request('session/prompt', { sessionId, prompt: text('STEER-ONE mid-turn') }).then((r) => ({ r }), (e) => ({ e: e.message }));
    console.log(`== prompt during a running turn: first ${JSON.stringify(await slow.catch((e) => e.message))}, second ${JSON.stringify(await second)}`);
    show('lines', agent.lines.slice(from), /agent_message_chunk|"result"|"error"/);
    from = agent.lines.length;
    const c = agent.request('session/prompt', { sessionId, prompt: text('SLOW again') });
    await agent.waitFor((m) => m.params?.update?.sessionUpdate === 'agent_message_chunk');
    agent.notify('session/cancel', { sessionId });
    console.log(`== cancel: prompt answered ${JSON.stringify(await c.catch((e) => e.message))}`);
    console.log(`== close: ${JSON.stringify(await agent.close())}`);
    agent = startAgent(home.env, home.ws);
    await agent.request('initialize', INIT);
    from = agent.lines.length;
    const ld = await agent.request('session/load', { sessionId, cwd: home.ws, mcpServers: [] });
    show(`session/load result ${trim(JSON.stringify(ld), 600)}`, agent.lines.slice(from));
    from = agent.lines.length;
    const r3 = await agent.request('session/prompt', { sessionId, prompt: text('TURN-THREE after load') });
    show(`TURN-THREE ${JSON.stringify(r3)}`, agent.lines.slice(from));
    const reqs = await prov.requests();
    console.log(`== provider requests:\n${reqs.map((q) => `  #${q.index} ${q.rule} ${q.body.model} msgs=${q.body.messages.length} stream_options=${JSON.stringify(q.body.stream_options)} last=${trim(JSON.stringify(q.body.messages.at(-1)), 160)}`).join('\n')}`);
    console.log(`== served ${JSON.stringify(await prov.served())}`);
    console.log(`== close: ${JSON.stringify(await agent.close())}`);
  } catch (e) {
    console.log(e);
    console.log(agent?.stderr().slice(-3000));
  } finally {
    await agent?.close();
    await prov.stop();
    if (!process.argv.includes('--keep')) home.cleanup(); else console.log(home.root);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
