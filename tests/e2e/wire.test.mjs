// The MCP protocol surface on the raw wire, without agentd: strict envelopes, version negotiation,
// server/discover, malformed input, unknown methods, wrong param types, size limit, stdin EOF.
// needs: clients
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, chmodSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { makeSandbox, removeSandbox, rawServer, strictEnvelope, serverEnv, waitNoLeftovers, killLeftovers, BIN, until, withTimeout } from './helpers.mjs';

let sb;
before(() => { sb = makeSandbox(); });
after(async () => {
  const left = await waitNoLeftovers(10000, sb);
  killLeftovers(sb);
  removeSandbox(sb);
  assert.deepEqual(left, [], 'no process of this test may be left');
});

// Asserts every stdout line was a strict JSON-RPC message.
function assertClean(srv) {
  assert.deepEqual(srv.badLines, [], 'stdout carries only JSON-RPC lines');
  for (const f of srv.frames) assert.equal(strictEnvelope(f), null, JSON.stringify(f));
}

test('negotiates each supported protocol version and offers the newest otherwise', async () => {
  for (const [asked, want] of [['2025-11-25', '2025-11-25'], ['2025-06-18', '2025-06-18'], ['2025-03-26', '2025-03-26'],
    ['2024-11-05', '2024-11-05'], ['2026-07-28', '2025-11-25'], ['1999-01-01', '2025-11-25']]) {
    const srv = rawServer(sb);
    const r = await srv.initialize({ protocolVersion: asked });
    assert.equal(r.result.protocolVersion, want, `asked ${asked}`);
    assert.equal(r.result.serverInfo.name, 'reasonix-mcp');
    assert.ok(r.result.capabilities.tools, 'tools capability');
    assert.ok(r.result.capabilities.logging, 'logging capability');
    const list = await srv.request('tools/list');
    const t = list.result.tools.find((x) => x.name === 'reasonix_poll');
    assert.equal(t.outputSchema, undefined, 'no placeholder outputSchema (results are documented in the description)');
    assert.equal(t.title, undefined, `no title under ${want}: hosts show the name, and it would cost every request`);
    if (want >= '2025-03-26') assert.ok(r.result.instructions?.includes('reasonix_watch'));
    await srv.close();
    assertClean(srv);
  }
});

test('server/discover before initialize gets a proper answer listing the versions we speak', async () => {
  const srv = rawServer(sb);
  const r = await srv.request('server/discover', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } });
  assert.deepEqual(r.result.supportedVersions, ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']);
  assert.equal(r.result.serverInfo.name, 'reasonix-mcp');
  assert.ok(r.result.capabilities.tools);
  // The probe did not consume the session: initialize still works afterwards.
  const init = await srv.initialize();
  assert.equal(init.result.protocolVersion, '2025-11-25');
  await srv.close();
  assertClean(srv);
});

test('malformed JSON, unknown methods and wrong param types get JSON-RPC errors; the server keeps running', async () => {
  const srv = rawServer(sb);
  const early = await srv.request('tools/list');
  assert.equal(early.error.code, -32002, 'tools/list before initialize is refused');
  await srv.initialize();

  srv.send('{"jsonrpc":"2.0","id":1,"method":');
  const parse = await srv.next((m) => m.error?.code === -32700);
  assert.equal(parse.id, null);

  srv.send('[1,2,3]');
  await srv.next((m) => m.error?.code === -32600 && m.id === null, 5000, 'batch refused');

  const unknown = await srv.request('no/such/method');
  assert.equal(unknown.error.code, -32601);
  assert.match(unknown.error.message, /no\/such\/method/);

  const resources = await srv.request('resources/list');
  assert.equal(resources.error.code, -32601, 'undeclared capability');

  srv.send({ jsonrpc: '2.0', id: 77, method: 'tools/list', params: 'nope' });
  assert.equal((await srv.next((m) => m.id === 77)).error.code, -32602);

  srv.send({ jsonrpc: '2.0', id: { x: 1 }, method: 'ping' });
  await srv.next((m) => m.error?.code === -32600 && m.error.message.includes('id'), 5000, 'object id refused');

  assert.equal((await srv.request('tools/call', { name: 5 })).error.code, -32602);
  assert.equal((await srv.request('tools/call', { name: 'reasonix_list', arguments: [1] })).error.code, -32602);
  const unknownTool = await srv.request('tools/call', { name: 'reasonix_nope', arguments: {} });
  assert.equal(unknownTool.error.code, -32602);
  assert.match(unknownTool.error.message, /Unknown tool/);

  assert.equal((await srv.request('logging/setLevel', { level: 'loud' })).error.code, -32602);
  assert.deepEqual((await srv.request('logging/setLevel', { level: 'warning' })).result, {});
  assert.equal((await srv.request('initialize', { protocolVersion: '2025-11-25' })).error.code, -32600, 'second initialize');

  // A notification that needs no answer (unknown, or a cancel for nothing) gets none.
  srv.send({ jsonrpc: '2.0', method: 'notifications/whatever', params: {} });
  srv.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 4242 } });
  assert.deepEqual((await srv.request('ping')).result, {}, 'still alive after all of it');
  await srv.close();
  assert.equal(srv.child.exitCode, 0, 'stdin EOF ends the server cleanly');
  assertClean(srv);
});

test('tool argument errors are isError results that name the field', async () => {
  const srv = rawServer(sb);
  await srv.initialize();
  const cases = [
    [{ name: 'reasonix_poll', arguments: { session_id: 5 } }, /session_id must be string/],
    [{ name: 'reasonix_poll', arguments: {} }, /missing required argument session_id/],
    [{ name: 'reasonix_spawn', arguments: { task: 'x', tool_approval: 'always' } }, /tool_approval must be one of ask, auto, yolo/],
    [{ name: 'reasonix_watch', arguments: { session_ids: [] } }, /session_ids needs at least 1/],
    [{ name: 'reasonix_watch', arguments: { session_ids: ['a'], timeout: 'soon' } }, /timeout must be number/],
    [{ name: 'reasonix_poll', arguments: { session_id: 'a', max_events: -1 } }, /max_events must be at least 0/],
    [{ name: 'reasonix_list', arguments: { includetask: true } }, /unknown argument includetask/],
  ];
  for (const [params, re] of cases) {
    const r = await srv.request('tools/call', params);
    assert.equal(r.result?.isError, true, JSON.stringify(params));
    assert.match(r.result.content[0].text, re);
  }
  const restart = await srv.request('tools/call', { name: 'reasonix_restart_mcp_server', arguments: {} });
  assert.equal(restart.result.isError, true);
  assert.match(restart.result.content[0].text, /launcher/);
  await srv.close();
  assertClean(srv);
});

test('tools/list: every capability in 17 tools with schemas, defaults and enums, in 8 KB', async () => {
  const srv = rawServer(sb);
  await srv.initialize();
  const frame = await srv.request('tools/list');
  const { result } = frame;
  const names = result.tools.map((t) => t.name);
  assert.deepEqual(names, ['reasonix_spawn', 'reasonix_watch', 'reasonix_respond_permission', 'reasonix_send', 'reasonix_poll',
    'reasonix_list', 'reasonix_stop', 'reasonix_resume', 'reasonix_configure', 'reasonix_transcript', 'reasonix_wait',
    'reasonix_models', 'reasonix_worktree', 'reasonix_routine', 'reasonix_dashboard', 'reasonix_restart_agentd',
    'reasonix_restart_mcp_server']);
  // every byte listed is in each host's model context on every request
  const size = Buffer.byteLength(JSON.stringify(result.tools));
  assert.ok(size <= 8192, `tools/list is ${size} bytes; the budget is 8 KB`);
  for (const t of result.tools) {
    assert.equal(t.inputSchema.type, 'object', t.name);
    assert.equal(typeof t.inputSchema.properties, 'object', t.name);
    assert.ok(t.description.length >= 45, `${t.name} has a description a model can act on`);
    assert.ok(t.annotations, t.name);
  }
  const by = Object.fromEntries(result.tools.map((t) => [t.name, t]));
  const spawn = by.reasonix_spawn.inputSchema;
  assert.equal(spawn.required, undefined, 'task, agents or fleet: the call says which');
  assert.deepEqual(spawn.properties.tool_approval.enum, ['ask', 'auto', 'yolo']);
  assert.deepEqual(spawn.properties.work_mode.enum, ['economy', 'balanced', 'delivery']);
  assert.equal(spawn.properties.model.default, undefined, 'the default model is for reasonix_models to say: a ref is long');
  assert.equal(spawn.properties.effort.default, 'auto', 'env default shown');
  assert.equal(spawn.properties.agents.type, 'array');
  assert.equal(spawn.properties.parallelism.default, 8);
  assert.deepEqual(by.reasonix_send.inputSchema.properties.expect.enum, ['any', 'steer', 'new_turn']);
  assert.equal(by.reasonix_send.inputSchema.properties.session_ids.type, 'array');
  assert.equal(by.reasonix_resume.inputSchema.properties.continue_interrupted.default, true);
  assert.equal(by.reasonix_poll.inputSchema.properties.max_events.default, 50);
  assert.equal(by.reasonix_poll.inputSchema.properties.max_events.maximum, undefined, 'over 200 is clamped, not refused');
  assert.deepEqual(by.reasonix_worktree.inputSchema.properties.action.enum, ['diff', 'info', 'remove', 'forecast', 'integrate']);
  assert.equal(by.reasonix_worktree.inputSchema.properties.action.type, undefined, 'a string enum says its type');
  assert.ok(by.reasonix_worktree.inputSchema.properties.session_ids && by.reasonix_worktree.inputSchema.properties.with);
  assert.ok(by.reasonix_routine.inputSchema.properties.action.enum.includes('templates'));
  assert.equal(by.reasonix_wait.inputSchema.properties.timeout.default, 30);
  assert.equal(by.reasonix_watch.inputSchema.properties.session_ids.type, 'array');
  assert.ok(by.reasonix_list.inputSchema.properties.pending_only);
  // annotations tell the truth: what consumes is not read-only; hints equal to the spec's defaults
  // are left out (destructiveHint defaults to true, readOnlyHint to false)
  assert.equal(by.reasonix_poll.annotations.readOnlyHint ?? false, false, 'a poll consumes what it shows');
  assert.equal(by.reasonix_watch.annotations.readOnlyHint ?? false, false);
  assert.equal(by.reasonix_list.annotations.readOnlyHint, true);
  assert.equal(by.reasonix_wait.annotations.readOnlyHint, true, 'wait consumes nothing');
  assert.equal(by.reasonix_stop.annotations.destructiveHint ?? true, true);
  assert.equal(by.reasonix_routine.annotations.destructiveHint ?? true, true, 'routine deletes');
  assert.equal(by.reasonix_spawn.annotations.destructiveHint, false);
  // a name an earlier list had still answers its name (its old arguments are checked, not "Unknown tool")
  const routine = await srv.request('tools/call', { name: 'reasonix_routine_run', arguments: {} });
  assert.equal(routine.result.isError, true);
  assert.match(routine.result.content[0].text, /missing required argument routine_id/);
  const many = await srv.request('tools/call', { name: 'reasonix_send', arguments: { message: 'x' } });
  assert.match(many.result.content[0].text, /give exactly one of session_id, session_ids/);
  await srv.close();
  assertClean(srv);
});

test('REASONIX_MCP_TOOLSETS=core lists the loop only; reasonix_toolsets (unlisted) lists more and tells the host', async () => {
  const srv = rawServer(sb, { env: serverEnv(sb, { REASONIX_MCP_TOOLSETS: 'core' }) });
  await srv.initialize();
  const { result } = await srv.request('tools/list');
  assert.deepEqual(result.tools.map((t) => t.name), ['reasonix_spawn', 'reasonix_watch', 'reasonix_respond_permission',
    'reasonix_send', 'reasonix_poll', 'reasonix_list', 'reasonix_stop', 'reasonix_resume', 'reasonix_transcript',
    'reasonix_wait', 'reasonix_models', 'reasonix_restart_agentd', 'reasonix_restart_mcp_server']);
  const changed = srv.next((m) => m.method === 'notifications/tools/list_changed');
  const r = await srv.request('tools/call', { name: 'reasonix_toolsets', arguments: { enable: ['fleet'] } });
  assert.equal(r.result.isError, undefined);
  const fleet = r.result.structuredContent.toolsets.find((t) => t.name === 'fleet');
  assert.equal(fleet.listed, true);
  assert.deepEqual(fleet.tools, ['reasonix_configure', 'reasonix_dashboard']);
  await changed;
  const after = (await srv.request('tools/list')).result.tools.map((t) => t.name);
  assert.ok(after.includes('reasonix_configure') && after.includes('reasonix_dashboard'));
  assert.ok(!after.includes('reasonix_routine'));
  await srv.close();
  assertClean(srv);
});

test('an oversized line is refused with an error and the connection survives', async () => {
  const srv = rawServer(sb, { env: serverEnv(sb, { REASONIX_MCP_MAX_LINE: '4096' }) });
  await srv.initialize();
  srv.send({ jsonrpc: '2.0', id: 9, method: 'ping', params: { pad: 'x'.repeat(10000) } });
  const err = await srv.next((m) => m.error && m.id === null && /exceeds/.test(m.error.message));
  assert.equal(err.error.code, -32600);
  assert.deepEqual((await srv.request('ping')).result, {});
  await srv.close();
  assertClean(srv);
});

test('runs with only HOME, PATH, USER, SHELL and TERM, via the bare launcher command', async () => {
  const env = { HOME: sb.home, PATH: process.env.PATH, USER: 'nobody', SHELL: '/bin/sh', TERM: 'dumb' };
  const srv = rawServer(sb, { env, args: [] });
  const init = await srv.initialize({ clientInfo: { name: 'minimal-env', version: '1' } });
  assert.equal(init.result.protocolVersion, '2025-11-25');
  const list = await srv.request('tools/list');
  assert.equal(list.result.tools.length, 17);
  await srv.close();
  assertClean(srv);
});

test('an unusable REASONIX_MCP_HOME gives an isError result saying what to fix', async () => {
  const bad = `${sb.root}/open`;
  mkdirSync(bad, { mode: 0o777 });
  chmodSync(bad, 0o777);
  const srv = rawServer(sb, { env: serverEnv(sb, { REASONIX_MCP_HOME: bad }) });
  await srv.initialize();
  const r = await srv.request('tools/call', { name: 'reasonix_list', arguments: {} });
  assert.equal(r.result.isError, true);
  assert.match(r.result.content[0].text, /mode 0777.*chmod 700/);
  await srv.close();
  assertClean(srv);
});

// Resolves once stream drains, or after 200 ms when it does not (the peer stopped reading).
function drainedOrStuck(stream) {
  return new Promise((resolve) => {
    const done = () => { clearTimeout(timer); stream.off('drain', done); resolve(); };
    const timer = setTimeout(done, 200);
    stream.on('drain', done);
  });
}

// Resident memory of pid in KiB (0 when it is gone).
function rssKiB(pid) {
  try { return Number(/VmRSS:\s*(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]); } catch { return 0; }
}

test('a host that never reads stdout is not read either: launcher and server memory stay bounded, and it all resumes', async () => {
  for (const args of [['server'], []]) {
    const child = spawn(BIN, args, { env: serverEnv(sb), cwd: sb.ws, stdio: ['pipe', 'pipe', 'ignore'] });
    const exited = once(child, 'exit');
    child.stdout.pause(); // nothing reads stdout until the end
    const write = (msg) => child.stdin.write(JSON.stringify(msg) + '\n');
    write({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'hog', version: '1' } } });
    write({ jsonrpc: '2.0', method: 'notifications/initialized' });
    // tools/list answers are ~8 KB each: 40,000 of them would be 320 MB if they piled up
    let sent = 0;
    const deadline = Date.now() + 4000;
    while (sent < 40000 && Date.now() < deadline) {
      const more = write({ jsonrpc: '2.0', id: ++sent, method: 'tools/list' });
      if (!more) await drainedOrStuck(child.stdin);
    }
    await new Promise((r) => setTimeout(r, 500)); // what it took in is processed
    const pids = [child.pid, ...readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)];
    for (const pid of pids) assert.ok(rssKiB(pid) < 64 * 1024, `${args[0] ?? 'launcher'}: pid ${pid} holds ${rssKiB(pid)} KiB for a host that does not read`);
    assert.ok(sent < 40000, `${args[0] ?? 'launcher'} stopped taking requests (took ${sent})`);
    // reading again, every request the host got to send is answered
    const ids = new Set();
    let buf = '';
    child.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const m = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (m.id > 0 && m.result) ids.add(m.id);
      }
    });
    child.stdout.resume();
    await until(() => ids.size === sent, 60000, `all ${sent} answers`);
    child.stdin.end();
    await withTimeout(exited, 10000, 'exit after stdin EOF');
  }
});
