// Gemini CLI (`agent: "gemini"`, pinned, real) driven through agentd by the MCP tools alone, against
// the scripted Gemini API on 127.0.0.1: spawn with tool_approval=ask → watch has the first turn's
// message → a second turn → a write asks (permission_request in watch), is allowed with
// respond_permission and lands in the session's cwd → a message sent during a slow turn is `queued`
// and starts the next turn → stop → resume → the next request to the API carries the earlier turns
// → stop leaves no Gemini process. Prints spawn → first turn end through agentd and driven directly.
// needs: agent python3 clients gemini
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync, readFileSync, mkdirSync } from 'node:fs';
import { AGENT as GEMINI, makeHome, agentEnv, startAgent, nextMinute, INIT } from './gemini_acp.mjs';
import { startGeminiApi } from './gemini_api.mjs';
import { useFixture, tool, until, sandboxProcesses } from './helpers.mjs';

// (rules get the write's target once the fixture's sandbox exists: the API reads the array per request)
const rules = [
  { contains: 'TURN-ONE', text: 'first answer' },
  { contains: 'TURN-TWO', text: 'second answer' },
  { contains: 'SLOW', text: 'slow slow slow slow slow slow', chunk: 5, delayMs: 400 },
  { contains: 'QUEUED-MSG', text: 'queued answer' },
  { contains: 'TURN-THREE', text: 'third answer' },
  { afterTool: 'write_file', text: 'written' },
];
const api = await startGeminiApi(rules);
after(() => api.stop());
const fx = useFixture({});
const timings = {};
// The text of the newest user turn of a request to the API.
const lastUser = (r) => JSON.stringify(r.body.contents?.at(-1) ?? {});
const mainRequests = () => api.requests.filter((r) => r.main);

// Watches sid until pred(result) holds (a result not passing it must not be an exit).
async function watchFor(client, sid, pred, what) {
  for (;;) {
    const w = await tool(client, 'reasonix_watch', { session_ids: [sid] });
    const r = w.results[sid];
    if (r && pred(r)) return r;
    assert.notEqual(r?.status, 'exited', `${what}: ${JSON.stringify(r)}`);
  }
}

test('gemini through agentd: turns, an asked write allowed, a queued message, stop, resume with history, none left', { timeout: 240000 }, async () => {
  const home = join(fx.sb.root, 'gemini');
  mkdirSync(home, { recursive: true });
  makeHome(home);
  const target = join(fx.sb.ws, 'landed.txt');
  rules.unshift({ contains: 'WRITE-IT', tool: 'write_file', args: { file_path: target, content: 'landed\n' } });
  const g = agentEnv(api.url, home);
  const env = fx.env({ REASONIX_MCP_AGENT_GEMINI: GEMINI, GEMINI_CLI_HOME: g.GEMINI_CLI_HOME, GEMINI_API_KEY: g.GEMINI_API_KEY,
    GOOGLE_GEMINI_BASE_URL: g.GOOGLE_GEMINI_BASE_URL, GEMINI_CLI_NO_RELAUNCH: 'true' });
  const { client } = await fx.connect({ name: 'gemini-host', env });

  const t0 = Date.now();
  const sp = await tool(client, 'reasonix_spawn', { task: 'TURN-ONE go', agent: 'gemini', tool_approval: 'ask' });
  const sid = sp.session_id;
  assert.equal(sp.tool_approval, 'ask', JSON.stringify(sp));
  const one = await watchFor(client, sid, (r) => r.status === 'idle', 'first turn');
  timings.agentd = Date.now() - t0;
  assert.match(one.message, /first answer/);
  assert.equal(one.stop_reason, 'end_turn');

  await tool(client, 'reasonix_send', { session_id: sid, message: 'TURN-TWO go' });
  const two = await watchFor(client, sid, (r) => r.status === 'idle' && /second answer/.test(r.message ?? ''), 'second turn');
  assert.equal(two.stop_reason, 'end_turn');

  // ask mode is Gemini's "default": write_file asks; the allow option lets it land in the cwd
  await tool(client, 'reasonix_send', { session_id: sid, message: 'WRITE-IT now' });
  const asked = await watchFor(client, sid, (r) => r.permission_request, 'the write asks');
  const pr = asked.permission_request;
  assert.equal(pr.tool_call?.kind, 'edit', JSON.stringify(pr));
  assert.ok(!existsSync(target), 'nothing written before the answer');
  const allow = pr.options.find((o) => o.kind === 'allow_once');
  assert.ok(allow, `an allow option: ${JSON.stringify(pr.options)}`);
  await tool(client, 'reasonix_respond_permission', { session_id: sid, option_id: allow.option_id ?? allow.optionId, request_id: pr.request_id });
  const wrote = await watchFor(client, sid, (r) => r.status === 'idle' && /written/.test(r.message ?? ''), 'the turn after the write');
  assert.equal(wrote.stop_reason, 'end_turn');
  assert.equal(readFileSync(target, 'utf8'), 'landed\n', 'the write landed in the session cwd');

  // a message during a turn waits for its end (steer = "queue": a second prompt would cancel the turn)
  await tool(client, 'reasonix_send', { session_id: sid, message: 'SLOW go' });
  await until(() => api.requests.some((r) => r.main && lastUser(r).includes('SLOW go')), 20000, 'the slow turn reached the API');
  const q = await tool(client, 'reasonix_send', { session_id: sid, message: 'QUEUED-MSG after it' });
  assert.equal(q.delivered, 'queued', JSON.stringify(q));
  const queued = await watchFor(client, sid, (r) => r.status === 'idle' && /queued answer/.test(r.message ?? ''), 'the queued turn');
  assert.equal(queued.stop_reason, 'end_turn');
  const slowReq = mainRequests().find((r) => lastUser(r).includes('SLOW go'));
  assert.equal(slowReq.complete, true, 'the slow turn ran to its end, not cancelled');
  assert.ok(mainRequests().some((r) => lastUser(r).includes('QUEUED-MSG')), 'the queued message started its own turn');

  await tool(client, 'reasonix_stop', { session_id: sid });
  await until(() => sandboxProcesses(fx.sb).filter((p) => /gemini/.test(p.cmd)).length === 0, 15000, 'gemini gone after stop');
  // Gemini CLI 0.61.0 names its chat file by the minute the session was made; a session/load in
  // that same minute starts the file afresh and loses the history: wait for the next minute.
  await nextMinute(t0);
  await tool(client, 'reasonix_resume', { session_id: sid });
  const n = api.requests.length;
  await tool(client, 'reasonix_send', { session_id: sid, message: 'TURN-THREE go' });
  const three = await watchFor(client, sid, (r) => r.status === 'idle' && /third answer/.test(r.message ?? ''), 'the turn after resume');
  assert.equal(three.stop_reason, 'end_turn');
  const sent = JSON.stringify(api.requests.slice(n).find((r) => r.main && lastUser(r).includes('TURN-THREE')).body.contents);
  for (const t of ['TURN-ONE go', 'first answer', 'TURN-TWO go', 'second answer', 'written', 'QUEUED-MSG', 'queued answer']) {
    assert.ok(sent.includes(t), `history kept across the resume: ${t}`);
  }

  await tool(client, 'reasonix_stop', { session_id: sid });
  await until(() => sandboxProcesses(fx.sb).filter((p) => /gemini/.test(p.cmd)).length === 0, 15000, 'no gemini process left after stop');
});

test('the same first turn, Gemini CLI driven directly (initialize, session/new, prompt)', async () => {
  const home = join(fx.sb.root, 'gemini-direct');
  const cwd = join(home, 'work');
  mkdirSync(cwd, { recursive: true });
  makeHome(home);
  const t0 = Date.now();
  const a = startAgent({ ...agentEnv(api.url, home), REASONIX_MCP_HOME: fx.sb.mcp }, cwd);
  try {
    await a.request('initialize', INIT);
    const s = await a.request('session/new', { cwd, mcpServers: [] });
    const r = await a.request('session/prompt', { sessionId: s.sessionId, prompt: [{ type: 'text', text: 'TURN-ONE go' }] });
    timings.direct = Date.now() - t0;
    assert.equal(r.stopReason, 'end_turn');
  } finally {
    await a.close();
  }
  console.log(`# gemini: spawn -> first turn end ${timings.agentd} ms through agentd, ${timings.direct} ms driven directly `
    + `(ratio ${(timings.agentd / timings.direct).toFixed(2)})`);
});
