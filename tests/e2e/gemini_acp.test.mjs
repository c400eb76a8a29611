// What agentd's gemini profile rests on: Gemini CLI (pinned, `gemini --acp`) runs offline in a
// private home against the scripted Gemini API on 127.0.0.1 and, over ACP: initializes
// (agentInfo gemini-cli, loadSession), opens a session with modes default/autoEdit/yolo/plan and a
// model list (no configOptions), answers two turns, asks session/request_permission before
// write_file (allow_always/allow_once/reject_once; the file lands once allowed), cancels the running
// turn when a second session/prompt arrives (so a message for a running turn must wait), reports
// each turn's usage only in the PromptResponse's _meta.quota (the API's prompt and candidates
// tokens; no usage_update), ends a turn on session/cancel, keeps history across session/load in a
// new process (replayed partly after the load's answer; lost if loaded in the minute it was made),
// and leaves no process once its stdin closes. A proxy trap sees every outbound request it tries: none.
// needs: clients gemini
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startGeminiApi } from './gemini_api.mjs';
import { startAgent, agentEnv, makeHome, nextMinute, startProxyTrap, INIT, MODEL } from './gemini_acp.mjs';
import { waitNoLeftovers, killLeftovers, until, RUN_ID } from './helpers.mjs';

const home = mkdtempSync(join(tmpdir(), 'gemini-acp-test-'));
const cwd = join(home, 'work');
mkdirSync(cwd);
makeHome(home);
const TARGET = join(cwd, 'landed.txt');
const api = await startGeminiApi([
  { contains: 'TURN-ONE', text: 'first answer', chunk: 6, usage: { promptTokenCount: 1000, candidatesTokenCount: 200, cachedContentTokenCount: 300, thoughtsTokenCount: 40 } },
  { contains: 'TURN-TWO', text: 'second answer', usage: { promptTokenCount: 50, candidatesTokenCount: 7 } },
  { contains: 'WRITE-IT', tool: 'write_file', args: { file_path: TARGET, content: 'landed\n' }, usage: { promptTokenCount: 30, candidatesTokenCount: 3 } },
  { afterTool: 'write_file', text: 'written', usage: { promptTokenCount: 31, candidatesTokenCount: 4 } },
  { contains: 'SLOW', text: 'slow slow slow slow slow', chunk: 5, delayMs: 500 },
  { contains: 'MIDTURN', text: 'mid-turn answer', usage: { promptTokenCount: 21, candidatesTokenCount: 2 } },
  { contains: 'TURN-THREE', text: 'third answer', usage: { promptTokenCount: 11, candidatesTokenCount: 13 } },
]);
const trap = await startProxyTrap();
const env = { ...agentEnv(api.url, home), ...trap.env, RMCP_E2E_RUN: RUN_ID };
const running = [];
after(async () => {
  for (const a of running) await a.close(1000);
  killLeftovers();
  await api.stop();
  await trap.stop();
  if (process.env.KEEP) console.log('kept', home); else rmSync(home, { recursive: true, force: true });
});

// Starts the agent and keeps it for cleanup.
function agent() {
  const a = startAgent(env, cwd);
  running.push(a);
  return a;
}
const text = (lines) => lines.filter((l) => !l.startsWith('> ')).map((l) => JSON.parse(l))
  .filter((m) => m.params?.update?.sessionUpdate === 'agent_message_chunk').map((m) => m.params.update.content.text).join('');
const quota = (r) => r._meta.quota.token_count;
let sessionId;
let created;

test('initialize, session/new, two turns, a permission, usage only in the prompt result', async () => {
  const a = agent();
  const init = await a.request('initialize', INIT);
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentInfo.name, 'gemini-cli');
  assert.equal(init.agentInfo.version, '0.61.0');
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.deepEqual(init.authMethods.map((m) => m.id), ['oauth-personal', 'gemini-api-key', 'vertex-ai', 'gateway']);

  const s = await a.request('session/new', { cwd, mcpServers: [] });
  sessionId = s.sessionId;
  assert.deepEqual(s.modes.availableModes.map((m) => m.id), ['default', 'autoEdit', 'yolo', 'plan']);
  assert.equal(s.modes.currentModeId, 'default');
  assert.equal(s.models.currentModelId, MODEL);
  assert.ok(s.models.availableModels.some((m) => m.modelId === 'auto'));
  assert.equal(s.configOptions, undefined);

  let before = a.lines.length;
  const r1 = await a.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-ONE go' }] });
  created = Date.now(); // (the session was made before: its minute is this one's or an earlier one)
  assert.equal(r1.stopReason, 'end_turn');
  assert.equal(text(a.lines.slice(before)), 'first answer');
  // input = promptTokenCount, output = candidatesTokenCount; cached and thoughts are not reported
  assert.deepEqual(quota(r1), { input_tokens: 1000, output_tokens: 200 });
  assert.deepEqual(r1._meta.quota.model_usage, [{ model: MODEL, token_count: { input_tokens: 1000, output_tokens: 200 } }]);

  before = a.lines.length;
  const r2 = await a.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-TWO go' }] });
  assert.equal(text(a.lines.slice(before)), 'second answer');
  assert.deepEqual(quota(r2), { input_tokens: 50, output_tokens: 7 });

  before = a.lines.length;
  const asked = a.next((m) => m.method === 'session/request_permission');
  const r3 = await a.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'WRITE-IT now' }] });
  const perm = (await asked).params;
  assert.deepEqual(perm.options, [
    { optionId: 'proceed_always', name: 'Allow for this session', kind: 'allow_always' },
    { optionId: 'proceed_once', name: 'Allow', kind: 'allow_once' },
    { optionId: 'cancel', name: 'Reject', kind: 'reject_once' },
  ]);
  assert.equal(perm.toolCall.status, 'pending');
  assert.equal(perm.toolCall.kind, 'edit');
  assert.match(perm.toolCall.toolCallId, /^write_file__/);
  assert.deepEqual(perm.toolCall.locations, [{ path: TARGET }]);
  assert.deepEqual(perm.toolCall.content[0], { type: 'diff', path: TARGET, oldText: '', newText: 'landed\n', _meta: { kind: 'add' } });
  // no tool_call announces it before the request: the request is the first word of the call
  const upd = a.lines.slice(before).filter((l) => !l.startsWith('> ')).map((l) => JSON.parse(l));
  const iPerm = upd.findIndex((m) => m.method === 'session/request_permission');
  assert.ok(!upd.slice(0, iPerm).some((m) => m.params?.update?.toolCallId === perm.toolCall.toolCallId));
  assert.ok(upd.some((m) => m.params?.update?.sessionUpdate === 'tool_call_update' && m.params.update.status === 'completed'));
  assert.equal(readFileSync(TARGET, 'utf8'), 'landed\n');
  // a turn's usage adds up the turn's requests (the call and the answer after it)
  assert.deepEqual(quota(r3), { input_tokens: 61, output_tokens: 7 });
  assert.ok(!a.lines.some((l) => l.includes('"usage_update"')), 'no usage_update notification');

  const served = api.served((r) => r.main);
  assert.deepEqual([served.promptTokenCount, served.candidatesTokenCount], [1000 + 50 + 61, 200 + 7 + 7]);
  assert.ok(api.requests.every((r) => /:streamGenerateContent$/.test(r.path)), 'only streamGenerateContent, no side requests');
  assert.deepEqual(await a.close(), { code: 0, sig: null }, 'exits on stdin EOF');
  assert.deepEqual(await waitNoLeftovers(), []);
});

test('a message during a running turn cancels it; session/cancel ends a turn', async () => {
  const a = agent();
  await a.request('initialize', INIT);
  const s = await a.request('session/new', { cwd, mcpServers: [] });
  const slow = a.request('session/prompt', { sessionId: s.sessionId, prompt: [{ type: 'text', text: 'SLOW go' }] });
  await a.next((m) => m.params?.update?.sessionUpdate === 'agent_message_chunk');
  const mid = await a.request('session/prompt', { sessionId: s.sessionId, prompt: [{ type: 'text', text: 'MIDTURN go' }] });
  assert.deepEqual(await slow, { stopReason: 'cancelled' }, 'the running turn is cut off, without usage');
  assert.equal(mid.stopReason, 'end_turn');
  assert.deepEqual(quota(mid), { input_tokens: 21, output_tokens: 2 });

  const slow2 = a.request('session/prompt', { sessionId: s.sessionId, prompt: [{ type: 'text', text: 'SLOW again' }] });
  await a.next((m) => m.params?.update?.sessionUpdate === 'agent_message_chunk');
  a.notify('session/cancel', { sessionId: s.sessionId });
  assert.deepEqual(await slow2, { stopReason: 'cancelled' });
  await a.close();
  assert.deepEqual(await waitNoLeftovers(), []);
});

test('session/load in a new process replays and keeps the history', { timeout: 120000 }, async () => {
  assert.ok(sessionId, 'the first test made the session');
  // 0.61.0 loses a session loaded in the minute it was made (its chat file is named by minute):
  // wait for a minute after the one the first turn ended in
  await nextMinute(created);
  const a = agent();
  await a.request('initialize', INIT);
  const loaded = await a.request('session/load', { sessionId, cwd, mcpServers: [] });
  assert.deepEqual(loaded.modes.availableModes.map((m) => m.id), ['default', 'autoEdit', 'yolo', 'plan']);
  // the replay is not awaited before the result: its updates may follow the session/load answer
  const replayed = () => a.lines.filter((l) => !l.startsWith('> ')).map((l) => JSON.parse(l)).map((m) => m.params?.update)
    .filter((u) => u && /^(user|agent)_message_chunk$/.test(u.sessionUpdate)).map((u) => u.content.text);
  await until(() => replayed().includes('written'), 10000, 'the replay of the last turn');
  const replay = replayed();
  for (const t of ['TURN-ONE go', 'first answer', 'TURN-TWO go', 'second answer', 'WRITE-IT now', 'written']) assert.ok(replay.includes(t), `replayed: ${t}`);
  const n = api.requests.length;
  const r = await a.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-THREE go' }] });
  assert.deepEqual(quota(r), { input_tokens: 11, output_tokens: 13 });
  const sent = JSON.stringify(api.requests[n].body.contents);
  for (const t of ['TURN-ONE go', 'second answer', 'written']) assert.ok(sent.includes(t), `the model sees the history: ${t}`);
  await a.close();
  assert.deepEqual(await waitNoLeftovers(), []);
  assert.ok(existsSync(TARGET));
  assert.deepEqual(trap.seen, [], 'nothing tried to reach beyond 127.0.0.1');
});
