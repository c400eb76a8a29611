// opencode's ACP mode (`opencode acp`, npm opencode-ai pinned in scripts/agents/opencode) runs offline
// against our scripted OpenAI Chat Completions provider, from a private HOME and XDG dirs: a custom
// provider in opencode.json, no models.dev fetch, no update check (a trap proxy sees only the npm
// registry, asked by its config-dir dependency install, which fails offline without effect).
// Proves its wire: initialize (agentInfo, loadSession), session/new (model and mode as configOptions,
// no `models`/`modes`), two turns, a write behind session/request_permission (once/always/reject) that
// lands, a prompt sent during a running turn folded into it (both answered at its end), usage (the
// last model step's tokens per prompt result, a usage_update with the context used), cancel,
// session/load in a new process (history replayed and sent to the model), exit on stdin EOF.
// needs: python3 clients opencode
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startAgent, makeHome, INIT, text, SCENARIO, VERSION } from './opencode_acp.mjs';
import { startProvider, leftovers, RUN_ID } from './helpers.mjs';

// A proxy that only counts: any request the agent sends off the machine would reach it.
const trapped = [];
// (without OPENCODE_DISABLE_MODELS_FETCH / _AUTOUPDATE it sees CONNECT models.opencode.ai:443 and registry.npmjs.org:443)
const trap = createServer((sock) => {
  trapped.push('connection');
  sock.once('data', (d) => { trapped.push(String(d).split('\r\n')[0]); sock.destroy(); });
});
await new Promise((r) => trap.listen(0, '127.0.0.1', r));
const trapUrl = `http://127.0.0.1:${trap.address().port}`;

const prov = await startProvider({ root: tmpdir() }, {});
const home = makeHome(prov.url, {
  RMCP_E2E_RUN: RUN_ID, HTTP_PROXY: trapUrl, HTTPS_PROXY: trapUrl, ALL_PROXY: trapUrl, NO_PROXY: '127.0.0.1,localhost',
});
after(async () => { await prov.stop(); trap.close(); home.cleanup(); });
const file = join(home.ws, 'notes', 'hello.txt');
const scenario = structuredClone(SCENARIO);
scenario.rules.find((r) => r.name === 'write').tool_calls[0].arguments.filePath = file;
await prov.setScenario(scenario);

const served = async () => (await fetch(`${prov.url}/_mock/served`)).json();
const updates = (lines, kind) => lines.map((l) => JSON.parse(l)).filter((m) => m.params?.update?.sessionUpdate === kind).map((m) => m.params.update);
const waitUpdate = (agent, kind, pred = () => true) => agent.waitFor((m) => m.params?.update?.sessionUpdate === kind && pred(m.params.update));

test('opencode acp, offline: turns, a permission, a mid-turn prompt, usage, cancel, load in a new process, no process left', async () => {
  let agent = startAgent(home.env, home.ws);
  let sessionId;
  try {
    const init = await agent.request('initialize', INIT);
    assert.deepEqual(init.agentInfo, { name: 'OpenCode', version: VERSION });
    assert.equal(init.protocolVersion, 1);
    assert.equal(init.agentCapabilities.loadSession, true);
    assert.deepEqual(Object.keys(init.agentCapabilities.sessionCapabilities).sort(), ['close', 'fork', 'list', 'resume']);

    const ns = await agent.request('session/new', { cwd: home.ws, mcpServers: [] });
    sessionId = ns.sessionId;
    assert.match(sessionId, /^ses_/);
    assert.equal(ns.models, undefined, 'no ACP models field: the model is a configOption');
    assert.equal(ns.modes, undefined, 'no ACP modes field: the mode is a configOption');
    const opt = (id) => ns.configOptions.find((o) => o.id === id);
    assert.deepEqual({ cat: opt('model').category, cur: opt('model').currentValue, values: opt('model').options.map((o) => o.value) },
      { cat: 'model', cur: 'mock/mock-model', values: ['mock/mock-model'] });
    assert.deepEqual({ cat: opt('mode').category, cur: opt('mode').currentValue, values: opt('mode').options.map((o) => o.value) },
      { cat: 'mode', cur: 'build', values: ['build', 'plan'] });

    // Turn one: the prompt result's usage is the model step's tokens (input without the cached part).
    let from = agent.lines.length;
    const one = await agent.request('session/prompt', { sessionId, prompt: text('TURN-ONE go') });
    assert.deepEqual(one.usage, { inputTokens: 700, outputTokens: 200, totalTokens: 1200, cachedReadTokens: 300 });
    assert.equal(one.stopReason, 'end_turn');
    assert.equal(updates(agent.lines.slice(from), 'agent_message_chunk').map((u) => u.content.text).join(''), 'first answer');
    assert.deepEqual(updates(agent.lines.slice(from), 'usage_update'), [{ sessionUpdate: 'usage_update', used: 1000, size: 128000, cost: { amount: 0, currency: 'USD' } }]);
    const s1 = await served();
    assert.equal(s1.responses, 2, 'the turn and a title request (small_model) served');
    assert.equal(s1.prompt_tokens, 1000 + 7, 'the title request is not in the prompt result');

    // Turn two: history went to the model.
    from = agent.lines.length;
    const two = await agent.request('session/prompt', { sessionId, prompt: text('TURN-TWO go') });
    assert.deepEqual(two.usage, { inputTokens: 50, outputTokens: 7, totalTokens: 57 });
    assert.match(updates(agent.lines.slice(from), 'agent_message_chunk').map((u) => u.content.text).join(''), /^second answer[^]*TURN-ONE go[^]*first answer/);

    // A write asks first (OPENCODE_PERMISSION edit: ask); allowed once, the file lands. Two model
    // steps (400/40 then 500/5): the result carries the last one's.
    from = agent.lines.length;
    const w = await agent.request('session/prompt', { sessionId, prompt: text('WRITE-IT now') });
    assert.equal(agent.permissions.length, 1);
    const p = agent.permissions[0].params;
    assert.deepEqual(p.options, [{ optionId: 'once', kind: 'allow_once', name: 'Allow once' },
      { optionId: 'always', kind: 'allow_always', name: 'Always allow' }, { optionId: 'reject', kind: 'reject_once', name: 'Reject' }]);
    assert.deepEqual({ id: p.toolCall.toolCallId, kind: p.toolCall.kind, status: p.toolCall.status, title: p.toolCall.title, loc: p.toolCall.locations },
      { id: 'call_3_0', kind: 'edit', status: 'pending', title: file, loc: [{ path: file }] });
    assert.deepEqual(p.toolCall.content, [{ type: 'diff', path: file, oldText: '', newText: 'line1\nline2\n' }]);
    assert.match(p.toolCall.rawInput.diff, /\+line1\n\+line2/);
    assert.equal(readFileSync(file, 'utf8'), 'line1\nline2\n', 'the write landed');
    // after the answer it also offers the write to the client (fs/write_text_file), refused here: it writes itself
    assert.ok(agent.lines.slice(from).some((l) => l.includes('"method":"fs/write_text_file"')), 'fs/write_text_file sent though the client said writeTextFile: false');
    assert.deepEqual(w.usage, { inputTokens: 500, outputTokens: 5, totalTokens: 505 }, 'the last model step, not the turn');
    assert.equal(updates(agent.lines.slice(from), 'tool_call_update').at(-1).status, 'completed');

    // A prompt sent while a turn runs is accepted, not refused: it is added to the running turn at
    // its next model step (after the tool), and both prompts are answered together at the end.
    const before = (await (await fetch(`${prov.url}/_mock/requests`)).json()).length;
    const running = agent.request('session/prompt', { sessionId, prompt: text('SLEEPY run it') });
    await waitUpdate(agent, 'tool_call_update', (u) => u.status === 'in_progress');
    await new Promise((r) => setTimeout(r, 300));
    const mid = agent.request('session/prompt', { sessionId, prompt: text('MIDTOOL message') });
    const [r1, r2] = await Promise.all([running, mid]);
    assert.equal(r1.stopReason, 'end_turn');
    assert.deepEqual(r1, r2, 'both prompts answered with the same result');
    const reqs = (await (await fetch(`${prov.url}/_mock/requests?since=${before}`)).json());
    assert.deepEqual(reqs.map((q) => q.rule), ['sleep', 'default'], 'no separate turn: the step after the tool carried the message');
    const last = reqs[1].body.messages;
    assert.deepEqual([last.at(-2).role, last.at(-1).role, last.at(-1).content], ['tool', 'user', 'MIDTOOL message']);

    // Cancel mid-stream.
    const c = agent.request('session/prompt', { sessionId, prompt: text('SLOW please') });
    await waitUpdate(agent, 'agent_message_chunk', (u) => u.content.text === 'xx');
    agent.notify('session/cancel', { sessionId });
    assert.deepEqual(await c, { stopReason: 'cancelled', usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, _meta: {} });
    const how = await agent.close();
    assert.deepEqual(how, { code: 0, signal: null, by: 'eof' }, 'stdin EOF ends it');
  } finally {
    await agent.close();
  }

  // A new process loads the session: history replayed as updates before the answer, then sent to the model.
  agent = startAgent(home.env, home.ws);
  try {
    await agent.request('initialize', INIT);
    const ld = await agent.request('session/load', { sessionId, cwd: home.ws, mcpServers: [] });
    assert.deepEqual(ld.configOptions.map((o) => [o.id, o.currentValue]), [['model', 'mock/mock-model'], ['mode', 'build']]);
    const replay = updates(agent.lines, 'user_message_chunk').map((u) => u.content.text);
    assert.deepEqual(replay, ['TURN-ONE go', 'TURN-TWO go', 'WRITE-IT now', 'SLEEPY run it', 'MIDTOOL message', 'SLOW please']);
    const from = agent.lines.length;
    const three = await agent.request('session/prompt', { sessionId, prompt: text('TURN-THREE after load') });
    assert.equal(three.stopReason, 'end_turn');
    assert.match(updates(agent.lines.slice(from), 'agent_message_chunk').map((u) => u.content.text).join(''), /^third answer[^]*TURN-ONE go[^]*first answer[^]*Wrote it\./);
  } finally {
    await agent.close();
  }

  // Left: its dependency install into the config dir (.gitignore written, npm registry asked for
  // @opencode-ai/plugin), which no flag of 1.18.33 found here stops; it fails offline without effect.
  assert.deepEqual([...new Set(trapped.filter((t) => t !== 'connection'))].filter((t) => t !== 'CONNECT registry.npmjs.org:443 HTTP/1.1'), [],
    `nothing but the npm registry was tried (no models.dev, no update check): ${trapped.join(', ')}`);
  assert.ok(!readdirSync(join(home.root, 'cache')).some((d) => existsSync(join(home.root, 'cache', d, 'models.json'))), 'no models.dev cache written');
  assert.deepEqual(leftovers().filter((x) => /opencode/.test(x.cmd)), [], 'no opencode process left');
});
