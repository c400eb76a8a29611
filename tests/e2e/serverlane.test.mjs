// The server's C path for the plain forwarding tools (core/serverlane.c, lua/rmcp/server/lane.lua)
// against the real server and agentd: the host gets the same answers with the lane as through Lua
// (REASONIX_MCP_SERVERLANE=0), results and agentd's errors alike, and the lane does take the calls;
// a list in flight when agentd is killed is answered by the restarted one; a policy that replaces
// reasonix_list, written while the lane is open, answers the very next call; a cancelled call the
// lane sent gets no answer; a watch the lane sent wakes at the turn's end, and a cancelled one gets
// no answer either; a send to one session, and calls with a real host's _meta, answer as through Lua. The agents are the fake ACP agent (tests/fake_agent).
// needs: python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, rawServer, agentdPid, BIN, REPO } from './helpers.mjs';

const fx = useFixture({}, (f) => {
  const path = join(f.sb.bin, 'reasonix'); // the fake agent on our own binary, as the agent binary
  writeFileSync(path, `#!/bin/sh\nexec '${BIN}' script '${join(REPO, 'tests', 'fake_agent', 'fake_acp.lua')}' "$@"\n`, { mode: 0o755 });
  f.agent = path;
});

// A raw server whose first list has connected its agentd link (the lane opens once it is); the
// second renews the reload check's window (1 s), in which the lane takes calls, if the first (an
// agentd start) outlasted it.
async function started(env = {}, version = '2025-06-18') {
  const srv = rawServer(fx.sb, { env: fx.env({ REASONIX_BIN: fx.agent, ...env }) });
  await srv.initialize({ protocolVersion: version });
  for (let i = 0; i < 2; i++) {
    const r = await srv.request('tools/call', { name: 'reasonix_list', arguments: {} });
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
  }
  return srv;
}

// The calls lane_taken said the server's lane took, from its log at its stop.
async function taken(srv) {
  await srv.close();
  const m = srv.stderr.join('').match(/server lane: (\d+) call\(s\) taken/);
  assert.ok(m, 'the server logs what its lane took');
  return Number(m[1]);
}

// Sends the calls back to back (the lane's reload window is open right after a call) and returns
// their answers without the ids.
async function answers(srv, calls) {
  const frames = await Promise.all(calls.map(([name, args]) => srv.request('tools/call', { name, arguments: args })));
  return frames.map(({ id: _id, ...rest }) => rest);
}

const CALLS = [
  ['reasonix_list', {}],
  ['reasonix_list', { all: true, limit: 5 }],
  ['reasonix_poll', { session_id: 'no-such-session' }], // agentd's error: handed to Lua by the lane
  ['reasonix_list', { limit: 'x' }], // the schema's error: Lua's
  ['reasonix_models', {}],
  ['reasonix_list', { include_task: true, pending_only: false }],
  ['reasonix_send', { session_id: 'no-such-session', message: 'x' }], // agentd's error: handed to Lua
  ['reasonix_send', { session_id: 'no-such-session', message: '' }], // the schema's error: Lua's
];

test('the lane answers as Lua does, results and errors alike, under each protocol version', async () => {
  for (const version of ['2025-06-18', '2025-03-26']) {
    const lane = await started({}, version);
    const lua = await started({ REASONIX_MCP_SERVERLANE: '0' }, version);
    const a = await answers(lane, CALLS);
    const b = await answers(lua, CALLS);
    assert.deepEqual(a, b);
    assert.equal(a[2].result.isError, true);
    assert.match(a[3].result.content[0].text, /limit must be integer/);
    assert.equal('structuredContent' in a[0].result, version >= '2025-06-18');
    // the text block is agentd's JSON as it came, the same that structuredContent decodes to
    if (a[0].result.structuredContent) assert.deepEqual(JSON.parse(a[0].result.content[0].text), a[0].result.structuredContent);
    assert.ok(await taken(lane) >= 3, 'the lane took the plain calls');
    assert.equal(await taken(lua), 0, 'REASONIX_MCP_SERVERLANE=0 keeps it closed');
  }
});

// The _meta real hosts send with every tools/call: Claude Code's (a progress token besides its own
// id) and Codex's (its own ids and turn metadata, no threadId).
const HOST_META = [
  { 'claudecode/toolUseId': 'toolu_1', progressToken: 1 },
  { callId: 'call_1', 'x-codex-turn-metadata': { thread_id: 't-1', turn_id: 'u-1' } },
];

test('calls with a real host\'s _meta take the lane and answer as Lua does', async () => {
  const lane = await started();
  const lua = await started({ REASONIX_MCP_SERVERLANE: '0' });
  const calls = HOST_META.flatMap((meta) => CALLS.map(([name, args]) => ({ name, arguments: args, _meta: meta })));
  const ask = async (srv) => (await Promise.all(calls.map((p) => srv.request('tools/call', p)))).map(({ id: _id, ...rest }) => rest);
  const a = await ask(lane);
  assert.deepEqual(a, await ask(lua));
  assert.equal(a[0].result.isError, undefined, JSON.stringify(a[0]));
  // of each host's calls, the four that agentd answers with a result are the lane's at least
  assert.ok(await taken(lane) >= 8, 'the lane took the calls with a host\'s _meta');
  assert.equal(await taken(lua), 0);
});

test('calls a second or more apart (past the reload check\'s window) still take the lane', async () => {
  const srv = await started();
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1100)); // (the host's pace is what is tested)
    const r = await srv.request('tools/call', { name: 'reasonix_list', arguments: {} });
    assert.ok(r.result && !r.result.isError, JSON.stringify(r));
  }
  assert.ok(await taken(srv) >= 3, 'the spaced calls went through the lane');
});

test('lists in flight when agentd is killed are answered by the agentd started again', async () => {
  const srv = await started();
  const pid = agentdPid(fx.sb);
  process.kill(pid, 'SIGSTOP'); // the lists wait in flight, written to agentd and unanswered
  const pending = [];
  for (let i = 0; i < 10; i++) pending.push(srv.request('tools/call', { name: 'reasonix_list', arguments: {} }));
  await srv.request('ping'); // answered once the server has read (and sent on) every list before it
  process.kill(pid, 'SIGKILL');
  const frames = await Promise.all(pending);
  for (const f of frames) assert.ok(f.result && !f.result.isError, JSON.stringify(f));
  assert.notEqual(agentdPid(fx.sb), pid, 'a new agentd answered');
  assert.ok(await taken(srv) >= 1, 'the lane had calls in flight');
});

test('a call the lane sent and the host cancelled gets no answer; the others do', async () => {
  const srv = await started();
  const pid = agentdPid(fx.sb);
  process.kill(pid, 'SIGSTOP');
  const kept = srv.request('tools/call', { name: 'reasonix_list', arguments: {} }, 7001);
  srv.send({ jsonrpc: '2.0', id: 7002, method: 'tools/call', params: { name: 'reasonix_list', arguments: { all: true } } });
  srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7002, reason: 'test' } });
  await srv.request('ping');
  process.kill(pid, 'SIGCONT');
  assert.ok((await kept).result.structuredContent);
  const after = await srv.request('tools/call', { name: 'reasonix_list', arguments: {} });
  assert.ok(after.result.structuredContent);
  assert.equal(srv.frames.find((f) => f.id === 7002), undefined, 'no answer to the cancelled call');
  assert.ok(await taken(srv) >= 2, 'the lane sent them');
});

// The answer to a send to an idle session of its own, the session's id made SID.
async function sendAnswer(srv) {
  const spawned = await srv.request('tools/call', { name: 'reasonix_spawn', arguments: { task: 'hello lane' } });
  const sid = spawned.result.structuredContent?.session_id;
  assert.ok(sid, JSON.stringify(spawned));
  await srv.request('tools/call', { name: 'reasonix_watch', arguments: { session_ids: [sid] } }); // its first turn's end
  const [sent] = await answers(srv, [['reasonix_send', { session_id: sid, message: 'again', expect: 'new_turn' }]]);
  return JSON.parse(JSON.stringify(sent).replaceAll(sid, 'SID'));
}

test('a send to one session through the lane answers as Lua does', async () => {
  const lane = await started();
  const lua = await started({ REASONIX_MCP_SERVERLANE: '0' });
  const a = await sendAnswer(lane);
  assert.deepEqual(a, await sendAnswer(lua));
  assert.equal(a.result.structuredContent.delivered, 'new_turn', JSON.stringify(a));
  assert.ok(await taken(lane) >= 1, 'the lane took calls');
  assert.equal(await taken(lua), 0);
});

test('a watch the lane sent wakes at the turn end; a cancelled one gets no answer', async () => {
  const srv = await started();
  const spawned = await srv.request('tools/call', { name: 'reasonix_spawn', arguments: { task: 'hello lane' } });
  const sid = spawned.result.structuredContent?.session_id;
  assert.ok(sid, JSON.stringify(spawned));
  const woke = await srv.request('tools/call', { name: 'reasonix_watch', arguments: { session_ids: [sid] } });
  assert.ok(!woke.result.isError, JSON.stringify(woke));
  assert.ok(woke.result.structuredContent.results[sid], JSON.stringify(woke.result.structuredContent));
  // nothing new: this watch blocks in agentd until the cancel releases it
  srv.send({ jsonrpc: '2.0', id: 8001, method: 'tools/call', params: { name: 'reasonix_watch', arguments: { session_ids: [sid] } } });
  await srv.request('ping');
  srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 8001 } });
  // (agentd answers a watch a newer one supersedes: without the cancel, that answer would reach the host)
  const sent = await srv.request('tools/call', { name: 'reasonix_send', arguments: { session_id: sid, message: 'again' } });
  assert.ok(!sent.result.isError, JSON.stringify(sent));
  const again = await srv.request('tools/call', { name: 'reasonix_watch', arguments: { session_ids: [sid] } });
  assert.ok(again.result.structuredContent.results[sid], JSON.stringify(again));
  assert.equal(srv.frames.find((f) => f.id === 8001), undefined, 'no answer to the cancelled watch');
  assert.ok(await taken(srv) >= 3, 'the lane sent the watches');
});

test('a policy that replaces reasonix_list, written while the lane is open, answers the next call', async () => {
  const srv = await started();
  const again = await srv.request('tools/call', { name: 'reasonix_list', arguments: {} });
  assert.ok(again.result.structuredContent.sessions, 'agentd answered');
  const dir = join(fx.sb.mcp, 'policy');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, 'list.lua.tmp'), `return { tools = { {
    name = "reasonix_list", description = "replaced", inputSchema = { type = "object", properties = {} },
    handler = function() return { replaced = true } end } } }\n`);
  renameSync(join(dir, 'list.lua.tmp'), join(dir, 'list.lua'));
  const replaced = await srv.request('tools/call', { name: 'reasonix_list', arguments: {} });
  assert.deepEqual(replaced.result.structuredContent, { replaced: true }, JSON.stringify(replaced));
  await srv.close();
});
