// opencode (`agent: "opencode"`, pinned, real) driven through agentd by the MCP tools alone, against
// the scripted Chat Completions provider on 127.0.0.1: spawn with tool_approval=ask → watch has the
// first turn's message → a second turn → a write asks (permission_request in watch), is allowed with
// respond_permission and lands in the session's cwd → a message sent during a slow turn is `queued`
// and starts the next turn → stop → resume → the next request to the provider carries the earlier
// turns → stop leaves no opencode process. Prints spawn → first turn end through agentd and driven directly.
// needs: agent python3 clients opencode
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { AGENT as OPENCODE, makeHome, startAgent, INIT, text } from './opencode_acp.mjs';
import { useFixture, tool, until, sandboxProcesses } from './helpers.mjs';

const scenario = (target) => ({
  models: ['mock-model'],
  rules: [
    { name: 'title', any_contains: 'Generate a title', text: 'Title here' },
    { name: 'one', last_role: 'user', user_contains: 'TURN-ONE', text: 'first answer' },
    { name: 'two', last_role: 'user', user_contains: 'TURN-TWO', text: 'second answer' },
    { name: 'write', last_role: 'user', user_contains: 'WRITE-IT', tool_calls: [{ name: 'write', arguments: { filePath: target, content: 'landed\n' } }] },
    { name: 'written', last_role: 'tool', last_tool_name: 'write', text: 'written' },
    { name: 'slow', last_role: 'user', user_contains: 'SLOW', text: 'x'.repeat(40), chunk: 2, delay: 0.1 },
    { name: 'queued', last_role: 'user', user_contains: 'QUEUED-MSG', text: 'queued answer' },
    { name: 'three', last_role: 'user', user_contains: 'TURN-THREE', text: 'third answer' },
  ],
  default: { text: 'ok' },
});
const fx = useFixture({});
const timings = {};
let home;
after(() => home?.cleanup());
// The text of a provider request's messages, and of its last one.
const all = (q) => JSON.stringify(q.body.messages);
const last = (q) => JSON.stringify(q.body.messages.at(-1));

// Watches sid until pred(result) holds (a result not passing it must not be an exit).
async function watchFor(client, sid, pred, what) {
  for (;;) {
    const w = await tool(client, 'reasonix_watch', { session_ids: [sid] });
    const r = w.results[sid];
    if (r && pred(r)) return r;
    assert.notEqual(r?.status, 'exited', `${what}: ${JSON.stringify(r)}`);
  }
}

test('opencode through agentd: turns, an asked write allowed, a queued message, stop, resume with history, none left', { timeout: 120000 }, async () => {
  const target = join(fx.sb.ws, 'landed.txt');
  await fx.provider.setScenario(scenario(target));
  home = makeHome(fx.provider.url);
  // its own XDG dirs and config; not makeHome's OPENCODE_PERMISSION (edits and commands ask): the
  // spawn's tool_approval=ask must make it ask (the profile's approval_env sets it)
  const env = fx.env({ REASONIX_MCP_AGENT_OPENCODE: OPENCODE,
    ...Object.fromEntries(Object.entries(home.env).filter(([k]) => (k.startsWith('XDG_') || k.startsWith('OPENCODE_') || k === 'MOCK_API_KEY')
      && k !== 'OPENCODE_PERMISSION')) });
  const { client } = await fx.connect({ name: 'opencode-host', env });

  const t0 = Date.now();
  const sp = await tool(client, 'reasonix_spawn', { task: 'TURN-ONE go', agent: 'opencode', tool_approval: 'ask' });
  const sid = sp.session_id;
  assert.equal(sp.tool_approval, 'ask', JSON.stringify(sp));
  assert.deepEqual(sp.warnings ?? [], [], 'ask applied, nothing to warn about');
  const one = await watchFor(client, sid, (r) => r.status === 'idle', 'first turn');
  timings.agentd = Date.now() - t0;
  assert.match(one.message, /first answer/);
  assert.equal(one.stop_reason, 'end_turn');

  await tool(client, 'reasonix_send', { session_id: sid, message: 'TURN-TWO go' });
  const two = await watchFor(client, sid, (r) => r.status === 'idle' && /second answer/.test(r.message ?? ''), 'second turn');
  assert.equal(two.stop_reason, 'end_turn');

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

  // a message during a turn waits for its end (steer = "queue": opencode answers both prompts only
  // at the turn's end), then starts a turn of its own
  await tool(client, 'reasonix_send', { session_id: sid, message: 'SLOW go' });
  for (let t = Date.now(); !(await fx.provider.requests()).some((q) => q.rule === 'slow'); ) {
    assert.ok(Date.now() - t < 20000, 'the slow turn reached the provider');
    await new Promise((r) => setTimeout(r, 50));
  }
  const q = await tool(client, 'reasonix_send', { session_id: sid, message: 'QUEUED-MSG after it' });
  assert.equal(q.delivered, 'queued', JSON.stringify(q));
  const queued = await watchFor(client, sid, (r) => r.status === 'idle' && /queued answer/.test(r.message ?? ''), 'the queued turn');
  assert.equal(queued.stop_reason, 'end_turn');
  const reqs = await fx.provider.requests();
  const iSlow = reqs.findIndex((x) => x.rule === 'slow');
  const iQueued = reqs.findIndex((x) => x.rule === 'queued');
  assert.ok(iQueued > iSlow && !all(reqs[iSlow]).includes('QUEUED-MSG'), 'the queued message came after the slow turn, in a request of its own');
  assert.match(last(reqs[iQueued]), /QUEUED-MSG/);

  await tool(client, 'reasonix_stop', { session_id: sid });
  await until(() => sandboxProcesses(fx.sb).filter((p) => /opencode/.test(p.cmd)).length === 0, 15000, 'opencode gone after stop');
  await tool(client, 'reasonix_resume', { session_id: sid });
  const n = (await fx.provider.requests()).length;
  await tool(client, 'reasonix_send', { session_id: sid, message: 'TURN-THREE go' });
  const three = await watchFor(client, sid, (r) => r.status === 'idle' && /third answer/.test(r.message ?? ''), 'the turn after resume');
  assert.equal(three.stop_reason, 'end_turn');
  const sent = all((await fx.provider.requests(n)).find((x) => x.rule === 'three'));
  for (const t of ['TURN-ONE go', 'first answer', 'TURN-TWO go', 'second answer', 'written', 'QUEUED-MSG', 'queued answer']) {
    assert.ok(sent.includes(t), `history kept across the resume: ${t}`);
  }

  await tool(client, 'reasonix_stop', { session_id: sid });
  await until(() => sandboxProcesses(fx.sb).filter((p) => /opencode/.test(p.cmd)).length === 0, 15000, 'no opencode process left after stop');
});

test('the same first turn, opencode driven directly (initialize, session/new, prompt)', async () => {
  const direct = makeHome(fx.provider.url, { REASONIX_MCP_HOME: fx.sb.mcp });
  const t0 = Date.now();
  const a = startAgent(direct.env, direct.ws);
  try {
    await a.request('initialize', INIT);
    const s = await a.request('session/new', { cwd: direct.ws, mcpServers: [] });
    const r = await a.request('session/prompt', { sessionId: s.sessionId, prompt: text('TURN-ONE go') });
    timings.direct = Date.now() - t0;
    assert.equal(r.stopReason, 'end_turn');
  } finally {
    await a.close();
    direct.cleanup();
  }
  console.log(`# opencode: spawn -> first turn end ${timings.agentd} ms through agentd, ${timings.direct} ms driven directly `
    + `(ratio ${(timings.agentd / timings.direct).toFixed(2)})`);
});
