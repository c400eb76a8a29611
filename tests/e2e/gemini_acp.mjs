// Gemini CLI (@google/gemini-cli, pinned in scripts/agents/gemini) in its ACP mode (`gemini
// --acp`), seen from a bare ACP client over stdio (acp_stdio.mjs), offline against the scripted
// Gemini API: a private home whose .gemini/settings.json picks the API-key auth and turns off
// telemetry, usage statistics, updates and the IDE; GOOGLE_GEMINI_BASE_URL points the @google/genai
// client at 127.0.0.1. Run: node tests/e2e/gemini_acp.mjs — prints the wire lines of one session
// (two text turns, a file write asked for, a session/load in a new process) and what the API
// served.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAcp } from './acp_stdio.mjs';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { startGeminiApi } from './gemini_api.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
export const REPO = resolve(HERE, '..', '..');
export const AGENT = process.env.GEMINI_BIN ?? join(REPO, '.agent', 'gemini', 'node_modules', '.bin', 'gemini');
export const ARGS = ['--acp'];
export const MODEL = 'gemini-2.5-flash';

// Writes the private Gemini home under home: .gemini/settings.json with the API-key auth, a fixed
// model (no routing requests) and nothing that phones out.
export function makeHome(home) {
  mkdirSync(join(home, '.gemini'), { recursive: true });
  writeFileSync(join(home, '.gemini', 'settings.json'), JSON.stringify({
    security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: false } },
    model: { name: MODEL },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false, enableNotifications: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    ide: { enabled: false },
  }, null, 2));
}

// The environment the agent runs offline in: the scripted API and its key, a private home (HOME
// and GEMINI_CLI_HOME: the dir that holds .gemini), no relaunch into a second node process.
export function agentEnv(apiUrl, home) {
  return {
    PATH: process.env.PATH, HOME: home, GEMINI_CLI_HOME: home,
    GEMINI_API_KEY: 'scripted-key', GOOGLE_GEMINI_BASE_URL: apiUrl,
    GEMINI_CLI_NO_RELAUNCH: 'true', NO_COLOR: '1', TERM: 'dumb',
  };
}

// Starts a proxy on 127.0.0.1 that forwards nothing and records every request or CONNECT made
// through it: with HTTPS_PROXY/HTTP_PROXY pointing at it (NO_PROXY 127.0.0.1), anything the agent
// tries to reach beyond the scripted API lands in `seen`. Resolves {url, seen, stop()}.
export async function startProxyTrap() {
  const trap = { seen: [] };
  const server = createServer((req, res) => { trap.seen.push(`${req.method} ${req.url}`); res.writeHead(502); res.end(); });
  server.on('connect', (req, socket) => { trap.seen.push(`CONNECT ${req.url}`); socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'); });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  trap.url = `http://127.0.0.1:${server.address().port}`;
  trap.env = { HTTPS_PROXY: trap.url, HTTP_PROXY: trap.url, https_proxy: trap.url, http_proxy: trap.url, NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost' };
  trap.stop = () => new Promise((r) => { server.closeAllConnections?.(); server.close(() => r()); });
  return trap;
}

// Starts the agent; returns {request(method, params), notify, next(test), lines, stderr(), close()}:
// lines is every NDJSON line it wrote (and `> ` + each line sent); requests it sends are answered
// by onRequest(msg) (default: permission allowed once, anything else refused). The agent ends its
// connection on stdin EOF: close waits graceMs (5 s) for it and resolves {code, sig}, with
// forced: true when it had to be signalled.
export function startAgent(env, cwd, opts = {}) {
  const acp = startAcp(process.execPath, [AGENT, ...ARGS], env, cwd, { onRequest: opts.onRequest, echoSent: true });
  return {
    ...acp,
    async close(graceMs = 5000) {
      const { code, signal, by } = await acp.close(graceMs);
      return by === 'eof' ? { code, sig: signal } : { code, sig: signal, forced: true };
    },
  };
}

// Waits until the wall-clock minute differs from the one of time t (ms): Gemini CLI names a chat
// file session-<minute>-<id8>.jsonl, and a session/load in the minute the session was created
// writes a fresh header into that very file and loses its history (0.61.0).
export async function nextMinute(t) {
  const minute = (ms) => Math.floor(ms / 60000);
  while (minute(Date.now()) === minute(t)) await new Promise((r) => setTimeout(r, 250));
}

export const INIT = { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false } };

// The session/update kinds of lines (in order, repeats folded).
export function kinds(lines) {
  const out = [];
  for (const l of lines) {
    if (l.startsWith('> ')) continue;
    const m = JSON.parse(l);
    const k = m.params?.update?.sessionUpdate ?? m.method ?? (m.result ? 'result' : 'error');
    if (out[out.length - 1] !== k) out.push(k);
  }
  return out;
}

const LIMIT = Number(process.env.LINE_LIMIT ?? 600);

async function main() {
  const home = mkdtempSync(join(tmpdir(), 'gemini-acp-'));
  const cwd = join(home, 'work');
  mkdirSync(cwd);
  const api = await startGeminiApi([
    { contains: 'TURN-ONE', text: 'first answer', usage: { promptTokenCount: 1000, candidatesTokenCount: 200, cachedContentTokenCount: 300, thoughtsTokenCount: 40 } },
    { contains: 'TURN-TWO', text: 'second answer', usage: { promptTokenCount: 50, candidatesTokenCount: 7 } },
    { contains: 'WRITE-IT', tool: 'write_file', args: { file_path: join(cwd, 'out.txt'), content: 'landed\n' }, usage: { promptTokenCount: 30, candidatesTokenCount: 3 } },
    { afterTool: 'write_file', text: 'written', usage: { promptTokenCount: 31, candidatesTokenCount: 4 } },
    { contains: 'TURN-THREE', text: 'third answer', usage: { promptTokenCount: 11, candidatesTokenCount: 13 } },
    { contains: 'SLOW', text: 'slow slow slow slow', chunk: 5, delayMs: 700 },
    { contains: 'MIDTURN', text: 'mid-turn answer' },
  ]);
  makeHome(home);
  const trap = await startProxyTrap();
  const env = { ...agentEnv(api.url, home), ...trap.env };
  const show = (label, lines) => { console.log(`== ${label}`); for (const l of lines) console.log(l.length > LIMIT ? l.slice(0, LIMIT) + '…' : l); };
  let agent;
  try {
    const t0 = Date.now();
    agent = startAgent(env, cwd);
    await agent.request('initialize', INIT);
    const s = await agent.request('session/new', { cwd, mcpServers: [] });
    const { sessionId } = s;
    await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-ONE go' }] });
    console.log(`== spawn → first turn end ${Date.now() - t0} ms`);
    show('first process so far', agent.lines);
    let before = agent.lines.length;
    await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-TWO go' }] });
    show('TURN-TWO', agent.lines.slice(before));
    before = agent.lines.length;
    await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'WRITE-IT now' }] });
    show('WRITE-IT', agent.lines.slice(before));
    console.log(`   out.txt exists: ${existsSync(join(cwd, 'out.txt'))}`);
    console.log(`== close: ${JSON.stringify(await agent.close())}`);
    await nextMinute(t0);
    agent = startAgent(env, cwd);
    await agent.request('initialize', INIT);
    await agent.request('session/load', { sessionId, cwd, mcpServers: [] });
    before = agent.lines.length;
    show('session/load', agent.lines);
    await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-THREE go' }] });
    show('TURN-THREE', agent.lines.slice(before));
    // a message while a turn runs: a second session/prompt at once
    before = agent.lines.length;
    const slow = agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'SLOW go' }] });
    await agent.next((m) => m.params?.update?.sessionUpdate === 'agent_message_chunk');
    const mid = await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'MIDTURN go' }] });
    console.log(`   first: ${JSON.stringify(await slow)} second: ${JSON.stringify(mid)}`);
    show('SLOW + MIDTURN', agent.lines.slice(before));
    // cancel
    before = agent.lines.length;
    const slow2 = agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'SLOW again' }] });
    await agent.next((m) => m.params?.update?.sessionUpdate === 'agent_message_chunk');
    agent.notify('session/cancel', { sessionId });
    console.log(`   cancelled turn: ${JSON.stringify(await slow2)}`);
    show('SLOW + cancel', agent.lines.slice(before));
    console.log(`== API served: ${JSON.stringify(api.served())}`);
    console.log(`== tried to reach beyond 127.0.0.1 (through the proxy trap): ${JSON.stringify(trap.seen)}`);
    console.log(api.requests.map((r) => JSON.stringify({ m: r.method, path: r.path, main: r.main, rule: r.rule, n: r.body.contents?.length, gc: r.body.generationConfig?.responseMimeType })).join('\n'));
  } finally {
    console.log(`== stderr tail:\n${agent?.stderr().slice(-1500)}`);
    await agent?.close();
    await api.stop();
    await trap.stop();
    if (process.env.KEEP) console.log('kept', home); else rmSync(home, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
