// Codex's ACP agent (@zed-industries/codex-acp, pinned in scripts/agents/codex) driven by a bare
// ACP client over stdio (acp_stdio.mjs), offline against the scripted Responses API, in a private
// HOME and CODEX_HOME: initialize, session/new, turns, a write that asks permission, a second
// prompt during a running turn, cancel, session/load in a new process. Prints the NDJSON lines that
// answer each step and what the API served, and times spawn → first turn end. Run: node
// tests/e2e/codex_acp.mjs [--times N]
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAcp } from './acp_stdio.mjs';
import { startResponsesApi } from './openai_responses_api.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = resolve(HERE, '..', '..');
// The pinned agent as scripts/agents/codex installs it (npm ci --prefix .agent/codex); its
// launcher is a node script that runs the platform package's native binary (spawnSync).
export const AGENT = process.env.CODEX_ACP_BIN ?? join(REPO_ROOT, '.agent', 'codex', 'node_modules', '.bin', 'codex-acp');

// Codex's config.toml for the scripted API: a model provider that is not "openai" (so no login is
// asked), the Responses wire, no retries, a known context window (usage_update needs one), nothing
// online (no analytics, no feedback, no update check).
export function codexConfig(apiUrl, { contextWindow = 200000 } = {}) {
  return [
    'model = "gpt-5.4"', 'model_provider = "scripted"', `model_context_window = ${contextWindow}`,
    'check_for_update_on_startup = false',
    '[analytics]', 'enabled = false',
    '[feedback]', 'enabled = false',
    '[model_providers.scripted]', 'name = "scripted"', `base_url = "${apiUrl}/v1"`, 'wire_api = "responses"',
    'env_key = "SCRIPTED_API_KEY"', 'request_max_retries = 0', 'stream_max_retries = 0', '',
  ].join('\n');
}

// A private home for one run: HOME, CODEX_HOME (HOME/.codex) with config.toml, a workspace; and
// the environment the agent runs in (nothing of the caller's but PATH).
export function makeHome(apiUrl, prefix = 'codex-acp-') {
  const home = mkdtempSync(join(tmpdir(), prefix));
  const codexHome = join(home, '.codex');
  const ws = join(home, 'ws');
  mkdirSync(codexHome, { recursive: true });
  mkdirSync(ws);
  writeFileSync(join(codexHome, 'config.toml'), codexConfig(apiUrl));
  const env = { PATH: process.env.PATH, HOME: home, CODEX_HOME: codexHome, SCRIPTED_API_KEY: 'scripted-key', LANG: 'C.UTF-8', TMPDIR: tmpdir() };
  return { home, codexHome, ws, env, remove: () => rmSync(home, { recursive: true, force: true }) };
}

// Starts the agent in its own process group; returns {request(method, params), notify, lines,
// asked, stderr(), exited, alive(), close(graceMs)}: lines is every NDJSON line it wrote; requests
// it sends are answered by onRequest(msg) (default: a permission allowed once, anything else
// refused), each kept in asked. close gives stdin EOF graceMs (3 s) and resolves {byEof}.
export function startAgent(env, cwd, { onRequest, args = [] } = {}) {
  const acp = startAcp(AGENT, args, env, cwd, { onRequest });
  return { ...acp, close: async (graceMs = 3000) => ({ byEof: (await acp.close(graceMs)).by === 'eof' }) };
}

// The live processes whose environment holds RMCP_E2E_RUN=run: [{pid, cmd}] (the agent's, with
// whatever it started; a test marks its agent's environment with it).
export function marked(run) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (!readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(`RMCP_E2E_RUN=${run}`)) continue;
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${name}/stat`, 'latin1'))) continue;
      found.push({ pid: Number(name), cmd: readFileSync(`/proc/${name}/cmdline`, 'latin1').replace(/\0/g, ' ').trim() });
    } catch { /* gone or not ours */ }
  }
  return found;
}

export const INIT = { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } };

// The session/update notifications of lines, parsed (their params.update).
export function updates(lines) {
  return lines.map((l) => { try { return JSON.parse(l); } catch { return null; } })
    .filter((m) => m?.method === 'session/update').map((m) => m.params.update);
}

// The agent's text of updates, joined (agent_message_chunk).
export function agentText(ups) {
  return ups.filter((u) => u.sessionUpdate === 'agent_message_chunk').map((u) => u.content?.text ?? '').join('');
}

// The rules of the scripted model the driver and the test share.
export const RULES = [
  { contains: 'TURN-ONE', text: 'first answer', usage: { input_tokens: 1000, cached_tokens: 300, output_tokens: 200, reasoning_tokens: 20 } },
  { contains: 'TURN-TWO', text: 'second answer', usage: { input_tokens: 50, cached_tokens: 5, output_tokens: 7, reasoning_tokens: 0 } },
  { contains: 'WRITE-FILE', tool: 'apply_patch', input: '*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n' },
  { afterTool: 'apply_patch', text: 'wrote it' },
  { contains: 'SLOW-TURN', text: 'slow answer that streams for a while', chunk: 4, delayMs: 300 },
  { contains: 'LONG-TURN', text: 'never finishes in time', chunk: 1, delayMs: 60000 },
  { contains: 'AFTER-LOAD', text: 'after load' },
];

// Spawn → initialize → session/new → one turn's end, ms (the agent driven directly).
export async function timeFirstTurn(apiUrl) {
  const h = makeHome(apiUrl, 'codex-acp-time-');
  const t0 = Date.now();
  const agent = startAgent(h.env, h.ws);
  try {
    await agent.request('initialize', INIT);
    const { sessionId } = await agent.request('session/new', { cwd: h.ws, mcpServers: [] });
    await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-ONE go' }] });
    return Date.now() - t0;
  } finally {
    await agent.close(0);
    h.remove();
  }
}

async function main() {
  const api = await startResponsesApi(RULES);
  const h = makeHome(api.url);
  const show = (label, lines) => { console.log(`== ${label}`); for (const l of lines) console.log('  ' + (l.length > 600 ? l.slice(0, 600) + '…' : l)); };
  let agent;
  try {
    agent = startAgent(h.env, h.ws);
    const init = await agent.request('initialize', INIT);
    show('initialize', agent.lines);
    let from = agent.lines.length;
    const s = await agent.request('session/new', { cwd: h.ws, mcpServers: [] });
    show('session/new', agent.lines.slice(from));
    const sessionId = s.sessionId;
    for (const word of ['TURN-ONE', 'TURN-TWO', 'WRITE-FILE']) {
      from = agent.lines.length;
      await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: `${word} go` }] });
      show(word, agent.lines.slice(from));
      console.log(`   API served so far: ${JSON.stringify(api.served())}`);
    }
    console.log(`   hello.txt: ${existsSync(join(h.ws, 'hello.txt'))}`);
    // a second prompt while a turn runs
    from = agent.lines.length;
    const slow = agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'SLOW-TURN go' }] });
    await new Promise((r) => setTimeout(r, 1500));
    const second = agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-TWO during' }] }, 600000);
    console.log('   slow:', JSON.stringify(await slow));
    const late = await Promise.race([second, new Promise((r) => setTimeout(() => r('no answer 3 s after the turn ended'), 3000))]);
    console.log('   second:', JSON.stringify(late));
    show('prompt during a turn', agent.lines.slice(from));
    // cancel
    from = agent.lines.length;
    const long = agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'LONG-TURN go' }] });
    await new Promise((r) => setTimeout(r, 1500));
    agent.notify('session/cancel', { sessionId });
    console.log('   cancelled:', JSON.stringify(await long));
    show('cancel', agent.lines.slice(from));
    console.log('   closed:', JSON.stringify(await agent.close()));
    agent = startAgent(h.env, h.ws);
    await agent.request('initialize', INIT);
    from = agent.lines.length;
    await agent.request('session/load', { sessionId, cwd: h.ws, mcpServers: [] });
    show('session/load in a new process', agent.lines.slice(from));
    from = agent.lines.length;
    await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'AFTER-LOAD go' }] });
    show('AFTER-LOAD', agent.lines.slice(from));
    const lastReq = api.requests.filter((r) => r.main).at(-1);
    console.log('   last request input:', JSON.stringify(lastReq.body.input.map((i) => (i.role ? `${i.role}:${textOf(i.content).slice(0, 40)}` : i.type))));
    console.log(`   API served in all: ${JSON.stringify(api.served())}; errors: ${api.errors.map((e) => e.message)}`);
    console.log(`   requests: ${JSON.stringify(api.requests.map((r) => `${r.method} ${r.path}`))}`);
    console.log('   closed:', JSON.stringify(await agent.close()));
    const times = [];
    const n = Number(process.argv[process.argv.indexOf('--times') + 1]) || 3;
    for (let i = 0; i < n; i++) times.push(await timeFirstTurn(api.url));
    times.sort((a, b) => a - b);
    console.log(`== spawn → first turn end: ${times.join(', ')} ms; median ${times[Math.floor(times.length / 2)]} ms`);
  } finally {
    await agent?.close(0);
    await api.stop();
    h.remove();
  }
}

// Text of a content (a string or parts).
function textOf(c) {
  return typeof c === 'string' ? c : Array.isArray(c) ? c.map((p) => p.text ?? '').join(' ') : '';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
