// Codex's ACP agent (@zed-industries/codex-acp 0.16.0, pinned in scripts/agents/codex) runs offline
// against our scripted OpenAI Responses API with a private HOME and CODEX_HOME, and behaves as
// lua/rmcp/rules/agents/codex.lua says: no login for a non-openai provider; modes read-only / auto /
// full-access and the model as configOptions (no session/set_model); a write asks
// session/request_permission (allow_once / reject_once) and lands when allowed; a second
// session/prompt during a turn joins that turn but is never answered (so agentd queues instead);
// usage only as usage_update {used, size} (no usage in the prompt result); cancel ends the turn
// "cancelled"; session/load (replay) and session/resume (none) in a new process keep the history;
// stdin EOF does not end it, its process group's SIGTERM does, and nothing is left.
// needs: codex-acp
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startResponsesApi } from './openai_responses_api.mjs';
import { makeHome, startAgent, updates, agentText, INIT, RULES, timeFirstTurn, marked } from './codex_acp.mjs';

const api = await startResponsesApi(RULES);
const h = makeHome(api.url);
const RUN = `codex-acp-${process.pid}`;
h.env.RMCP_E2E_RUN = RUN; // every process of the agent carries it: the leftover check
const leftovers = () => marked(RUN);
let agent;
let sessionId;
after(async () => {
  await agent?.close(0);
  await api.stop();
  h.remove();
});

// Runs one turn of text; resolves {result, ups} (the session/update payloads it sent).
async function turn(text) {
  const from = agent.lines.length;
  const result = await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] });
  return { result, ups: updates(agent.lines.slice(from)) };
}

test('initialize: codex-acp 0.16.0, loadSession, resume/list/close, auth methods it does not need here', async () => {
  agent = startAgent(h.env, h.ws);
  const init = await agent.request('initialize', INIT);
  assert.deepEqual(init.agentInfo, { name: 'codex-acp', title: 'Codex', version: '0.16.0' });
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.deepEqual(Object.keys(init.agentCapabilities.sessionCapabilities).sort(), ['close', 'list', 'resume']);
  assert.deepEqual(init.authMethods.map((m) => m.id), ['chatgpt', 'codex-api-key', 'openai-api-key']);
});

test('session/new without authenticate: modes, and model / effort / mode as configOptions; no set_model', async () => {
  const s = await agent.request('session/new', { cwd: h.ws, mcpServers: [] });
  sessionId = s.sessionId;
  assert.equal(s.models, undefined, 'no models field: the model is a config option');
  assert.equal(s.modes.currentModeId, 'read-only');
  assert.deepEqual(s.modes.availableModes.map((m) => m.id), ['read-only', 'auto', 'full-access']);
  assert.deepEqual(s.configOptions.map((o) => [o.id, o.category, o.currentValue]),
    [['mode', 'mode', 'read-only'], ['model', 'model', 'gpt-5.4'], ['reasoning_effort', 'thought_level', 'medium']]);
  assert.ok(s.configOptions[1].options.some((o) => o.value === 'gpt-5.4-mini'), 'its bundled model list, offline');
  await assert.rejects(agent.request('session/set_model', { sessionId, modelId: 'gpt-5.4-mini' }), /-32601/);
  const set = await agent.request('session/set_config_option', { sessionId, configId: 'reasoning_effort', value: 'low' });
  assert.equal(set.configOptions.find((o) => o.id === 'reasoning_effort').currentValue, 'low');
});

test('two turns of text; usage only as usage_update {used = input + output of the last response, size}', async () => {
  const one = await turn('TURN-ONE go');
  assert.deepEqual(one.result, { stopReason: 'end_turn' }, 'no usage in the prompt result');
  assert.equal(agentText(one.ups), 'first answer');
  assert.deepEqual(one.ups.filter((u) => u.sessionUpdate === 'usage_update'), [{ sessionUpdate: 'usage_update', used: 1200, size: 190000 }]);
  const two = await turn('TURN-TWO go');
  assert.equal(agentText(two.ups), 'second answer');
  assert.deepEqual(two.ups.filter((u) => u.sessionUpdate === 'usage_update'), [{ sessionUpdate: 'usage_update', used: 57, size: 190000 }]);
  const served = api.served();
  assert.deepEqual(served, { input_tokens: 1050, cached_tokens: 305, output_tokens: 207, reasoning_tokens: 20, responses: 2 });
  const second = api.requests.filter((r) => r.main)[1].body;
  assert.match(JSON.stringify(second.input), /TURN-ONE go[\s\S]*first answer[\s\S]*TURN-TWO go/, 'turn two carries turn one');
  assert.equal(second.reasoning?.effort, 'low', 'the effort set as a config option reaches the API');
});

test('a write asks session/request_permission (string id, edit, allow_once/reject_once); allowed, the file lands', async () => {
  const asked = agent.asked.length;
  const t = await turn('WRITE-FILE go');
  assert.deepEqual(t.result, { stopReason: 'end_turn' });
  const req = agent.asked.slice(asked).find((m) => m.method === 'session/request_permission');
  assert.ok(req, 'a permission request');
  assert.equal(typeof req.id, 'string', 'its JSON-RPC id is a string (a UUID)');
  assert.equal(req.params.toolCall.kind, 'edit');
  assert.deepEqual(req.params.toolCall.locations, [{ path: join(h.ws, 'hello.txt') }]);
  assert.deepEqual(req.params.options, [{ optionId: 'approved', name: 'Yes', kind: 'allow_once' }, { optionId: 'abort', name: 'No, provide feedback', kind: 'reject_once' }]);
  assert.equal(readFileSync(join(h.ws, 'hello.txt'), 'utf8'), 'hello from codex\n');
  assert.equal(agentText(t.ups), 'wrote it');
  assert.deepEqual(api.errors, []);
});

test('a second session/prompt during a turn joins that turn and is never answered', async () => {
  const from = agent.lines.length;
  const slow = agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'SLOW-TURN go' }] });
  for (let t0 = Date.now(); !agentText(updates(agent.lines.slice(from))).startsWith('slow');) {
    assert.ok(Date.now() - t0 < 20000, 'the slow turn streams');
    await new Promise((r) => setTimeout(r, 20));
  }
  let answered = false;
  agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-TWO during' }] }, 600000)
    .then(() => { answered = true; }, () => { answered = true; });
  assert.deepEqual(await slow, { stopReason: 'end_turn' });
  const text = agentText(updates(agent.lines.slice(from)));
  assert.ok(text.endsWith('second answer'), `the steered message was answered in the same turn: ${text}`);
  await new Promise((r) => setTimeout(r, 3000));
  assert.equal(answered, false, 'the second session/prompt has no answer');
});

test('session/cancel ends a running turn with stopReason cancelled', async () => {
  const from = agent.lines.length;
  const long = agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'LONG-TURN go' }] });
  for (let t0 = Date.now(); !api.requests.some((r) => r.last?.text?.includes('LONG-TURN'));) {
    assert.ok(Date.now() - t0 < 20000, 'the long turn reached the API');
    await new Promise((r) => setTimeout(r, 20));
  }
  agent.notify('session/cancel', { sessionId });
  assert.deepEqual(await long, { stopReason: 'cancelled' });
  assert.ok(agent.lines.length > from);
});

test('stdin EOF does not end it; its process group SIGTERM does, nothing left', async () => {
  const { byEof } = await agent.close(2000);
  assert.equal(byEof, false, 'still running 2 s after stdin EOF');
  assert.deepEqual(leftovers(), [], 'no process of the agent is left');
});

test('session/load in a new process replays the history and keeps it; session/resume keeps it without replay', async () => {
  agent = startAgent(h.env, h.ws);
  await agent.request('initialize', INIT);
  let from = agent.lines.length;
  const loaded = await agent.request('session/load', { sessionId, cwd: h.ws, mcpServers: [] });
  assert.equal(loaded.modes.currentModeId, 'read-only');
  const replay = updates(agent.lines.slice(from));
  assert.deepEqual(replay.filter((u) => u.sessionUpdate === 'user_message_chunk').map((u) => u.content.text),
    ['TURN-ONE go', 'TURN-TWO go', 'WRITE-FILE go', 'SLOW-TURN go', 'TURN-TWO during', 'LONG-TURN go']);
  assert.ok(replay.some((u) => u.sessionUpdate === 'tool_call' && u.kind === 'edit'), 'the write is replayed as a tool call');
  const t = await turn('AFTER-LOAD go');
  assert.equal(agentText(t.ups), 'after load');
  const input = JSON.stringify(api.requests.filter((r) => r.main).at(-1).body.input);
  assert.match(input, /TURN-ONE go[\s\S]*hello from codex[\s\S]*AFTER-LOAD go/, 'the history reached the API');
  await agent.close(0);

  agent = startAgent(h.env, h.ws);
  await agent.request('initialize', INIT);
  from = agent.lines.length;
  await agent.request('session/resume', { sessionId, cwd: h.ws, mcpServers: [] });
  assert.deepEqual(updates(agent.lines.slice(from)).filter((u) => /message_chunk|tool_call/.test(u.sessionUpdate)), [], 'resume replays nothing');
  await turn('TURN-TWO again');
  assert.match(JSON.stringify(api.requests.filter((r) => r.main).at(-1).body.input), /AFTER-LOAD go[\s\S]*TURN-TWO again/);
  const list = await agent.request('session/list', {});
  assert.deepEqual(list.sessions.map((s) => s.sessionId), [sessionId]);
  await agent.close(0);
  agent = undefined;
  assert.deepEqual(leftovers(), []);
});

test('nothing reached anything but the scripted API; spawn → first turn end (median of 3)', async () => {
  assert.ok(api.requests.every((r) => r.path === '/v1/responses'), `only /v1/responses: ${[...new Set(api.requests.map((r) => r.path))]}`);
  assert.ok(!existsSync(join(h.codexHome, 'auth.json')), 'no login was stored');
  const times = [];
  for (let i = 0; i < 3; i++) times.push(await timeFirstTurn(api.url));
  times.sort((a, b) => a - b);
  console.log(`# codex-acp spawn → first turn end: ${times.join(', ')} ms, median ${times[1]} ms`);
  assert.deepEqual(leftovers(), []);
});
