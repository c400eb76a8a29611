// Lua hot reload against the real agent (issue #5): editing a policy file while an agent runs changes
// behaviour on the next call, with the session, its turns and an in-flight watch intact; a broken
// policy (syntax error, failing selfcheck) keeps the old one and is reported once (log, _meta
// warnings, notifications/message); editing a built-in module under lua/ is picked up the same way,
// in the server and in agentd. Every process here runs a private copy of the lua/ tree
// (REASONIX_MCP_LUA_DIR), so the repository's files are never touched.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { REPO, useFixture, tool, callTool, agentdPid, withTimeout, until } from './helpers.mjs';

const LONG = 'L'.repeat(120) + '-middle-' + 'l'.repeat(120);
const SLOW = 'slow-stream-'.repeat(25); // 300 bytes in 30 chunks over ~1.5 s
const scenario = {
  rules: [
    { name: 'long', last_role: 'user', user_contains: 'LONG-TASK', text: LONG },
    { name: 'slow', last_role: 'user', user_contains: 'SLOW-TASK', text: SLOW, chunk: 10, delay: 0.05 },
  ],
  default: { text: 'ok' },
};

const fx = useFixture({ scenario }, (f) => {
  f.lua = join(f.sb.root, 'lua');
  cpSync(join(REPO, 'lua'), f.lua, { recursive: true });
  mkdirSync(f.sb.mcp, { recursive: true, mode: 0o700 });
  f.policyDir = join(f.sb.mcp, 'policy');
  mkdirSync(f.policyDir, { mode: 0o700 });
});

// Writes a file through a rename, as editors do (a new inode: the change is seen at once).
function write(path, text) {
  writeFileSync(path + '.tmp', text);
  renameSync(path + '.tmp', path);
}

// The probe policy: a tool that reports its version, and a watch-message cap.
function probePolicy(version, cap, extra = '') {
  return `-- test policy v${version}
return {
  caps = { max_watch_message = ${cap} },
  tools = { {
    name = "policy_probe", description = "probe v${version}",
    inputSchema = { type = "object", properties = {} },
    handler = function(args, ctx) return { version = ${version}, orchestrator = ctx.orchestrator_id } end,
  } },
${extra}}
`;
}

// A server of this file (one orchestrator, so every test sees the same session): the private lua
// tree; tools/list_changed notifications are counted.
async function connect(name) {
  const env = fx.env({ REASONIX_MCP_LUA_DIR: fx.lua, REASONIX_MCP_ORCHESTRATOR_ID: 'reload-e2e' });
  const c = await fx.connect({ name, env });
  c.listChanged = 0;
  c.client.setNotificationHandler(ToolListChangedNotificationSchema, () => { c.listChanged += 1; });
  return c;
}

// Watches sid until its result arrives.
async function watchOne(client, sid) {
  for (;;) {
    const r = await tool(client, 'reasonix_watch', { session_ids: [sid] });
    if (r.results?.[sid]) return r.results[sid];
  }
}

// The reload warnings a call result carries.
const warningsOf = (result) => result._meta?.['reasonix/warnings'] ?? [];

let session; // the agent that lives through every reload in this file

test('editing a policy while an agent runs applies on the next call; session and in-flight watch survive', async () => {
  const probe = join(fx.policyDir, '10-probe.lua');
  write(probe, probePolicy(1, 60));
  const c = await connect('reload-policy');
  assert.equal((await tool(c.client, 'policy_probe', {})).version, 1);

  const spawned = await tool(c.client, 'reasonix_spawn', { task: 'LONG-TASK answer at length', keep_alive: true });
  session = spawned.session_id;
  const first = await watchOne(c.client, session);
  assert.equal(first.message_truncated, true, 'v1 caps the watch message at 60 bytes');
  assert.ok(first.message.length < 120, `capped: ${first.message.length} bytes`);
  const daemon = agentdPid(fx.sb);

  await tool(c.client, 'reasonix_send', { session_id: session, message: 'SLOW-TASK stream for a while' });
  const inflight = tool(c.client, 'reasonix_watch', { session_ids: [session] }); // blocks until the turn ends
  const t0 = Date.now();
  write(probe, probePolicy(2, 200));
  const listed = await c.client.listTools();
  const probeTool = listed.tools.find((t) => t.name === 'policy_probe');
  assert.equal(probeTool.description, 'probe v2', 'the next tools/list shows the new description');
  assert.equal(c.listChanged, 1, 'the client was told the tool list changed');
  assert.equal((await tool(c.client, 'policy_probe', {})).version, 2, 'the next call runs the new handler');
  const running = await tool(c.client, 'reasonix_poll', { session_id: session });
  assert.ok(['running', 'idle'].includes(running.status), running.status);
  console.log(`# policy edit -> new behaviour in ${Date.now() - t0} ms (two calls)`);

  const w = await withTimeout(inflight, 30000, 'the in-flight watch');
  const r = w.results[session];
  assert.ok(r, 'the watch started before the reload still returns the result');
  assert.equal(r.status, 'idle');
  assert.equal(r.stop_reason, 'end_turn');
  assert.equal(r.message_truncated, true);
  assert.ok(r.message.length > 120 && r.message.length < 260, `shaped with the new 200-byte cap: ${r.message.length}`);
  const tr = await tool(c.client, 'reasonix_transcript', { session_id: session });
  assert.equal(tr.roles.user, 2, 'both turns are in the session');
  assert.equal(tr.roles.assistant, 2);
  assert.equal(agentdPid(fx.sb), daemon, 'no restart');
});

test('a broken policy keeps the old one; the error is reported once with file:line', async () => {
  const probe = join(fx.policyDir, '10-probe.lua');
  const c = await connect('reload-broken');
  assert.equal((await tool(c.client, 'policy_probe', {})).version, 2);

  write(probe, probePolicy(3, 100).replace('tools = {', 'tools = {{'));
  const { result, data } = await callTool(c.client, 'policy_probe', {});
  assert.equal(result.isError, undefined, 'a warning, not a failure');
  assert.equal(data.version, 2, 'the previous version keeps running');
  const [warning] = warningsOf(result);
  assert.match(warning, /10-probe\.lua:\d+: .*previous version keeps running|previous version keeps running: .*10-probe\.lua:\d+:/);
  assert.ok(result.content.some((b) => b.text.includes('10-probe.lua')), 'visible to the model as text');
  assert.ok(c.messages.some((m) => m.level === 'warning' && m.data.warning === warning), 'notifications/message warning');
  await until(() => c.stderr.join('').includes(warning), 5000, 'the warning in the server log');
  const list = await callTool(c.client, 'reasonix_list', {});
  assert.deepEqual(warningsOf(list.result), [], 'reported once (agentd\'s copy of the same error is not repeated)');
  assert.match(readFileSync(join(fx.sb.mcp, 'agentd.log'), 'utf8'), /10-probe\.lua:\d+:/, 'agentd logged it too');
  assert.ok(list.data.sessions.some((s) => s.session_id === session && s.status === 'idle'), 'the session is intact');

  write(probe, probePolicy(4, 100, '  selfcheck = function() local cfg = nil; return cfg.ready end,\n'));
  const second = await callTool(c.client, 'policy_probe', {});
  assert.equal(second.data.version, 2);
  assert.match(warningsOf(second.result).join('\n'), /10-probe\.lua:\d+: attempt to index a nil value/);

  write(probe, probePolicy(5, 100));
  const fixed = await callTool(c.client, 'policy_probe', {});
  assert.equal(fixed.data.version, 5, 'the fixed file is picked up');
  assert.deepEqual(warningsOf(fixed.result), []);
});

test('editing a built-in module under lua/ is picked up on the next call, in the server and in agentd', async () => {
  const c = await connect('reload-builtin');
  const listFile = join(fx.lua, 'rmcp', 'tools', 'list.lua');
  const watchFile = join(fx.lua, 'rmcp', 'rules', 'watch.lua');
  const pollFile = join(fx.lua, 'rmcp', 'rules', 'poll.lua');
  const listSrc = readFileSync(listFile, 'utf8');
  const watchSrc = readFileSync(watchFile, 'utf8');
  const pollSrc = readFileSync(pollFile, 'utf8');

  write(listFile, listSrc.replace('Your sessions', 'RELOADED: Your sessions'));
  const listed = await c.client.listTools();
  assert.match(listed.tools.find((t) => t.name === 'reasonix_list').description, /^RELOADED: /, 'server module reloaded');

  write(watchFile, watchSrc.replace(/\n  return r\nend/, '\n  r.shaped_by = "reloaded watch.lua"\n  return r\nend'));
  await tool(c.client, 'reasonix_send', { session_id: session, message: 'another turn please' });
  const r = await watchOne(c.client, session);
  assert.equal(r.shaped_by, 'reloaded watch.lua', 'agentd module reloaded');
  assert.equal(r.status, 'idle');

  write(pollFile, pollSrc.replace('local M = {}', 'local M = {\n'));
  const broken = await callTool(c.client, 'reasonix_poll', { session_id: session });
  assert.equal(broken.result.isError, undefined, 'the old poll.lua keeps answering');
  assert.equal(broken.data.status, 'idle');
  assert.match(warningsOf(broken.result).join('\n'), /poll\.lua:\d+:/, 'agentd\'s reload error reaches the caller');
  write(listFile, listSrc.replace('local common', 'local common = = 1\nlocal common'));
  const broken2 = await callTool(c.client, 'reasonix_list', {});
  assert.ok(broken2.data.sessions.length >= 1);
  assert.match(warningsOf(broken2.result).join('\n'), /tools\/list\.lua:\d+:/, 'the server\'s reload error too');

  write(pollFile, pollSrc);
  write(listFile, listSrc);
  write(watchFile, watchSrc);
  const ok = await callTool(c.client, 'reasonix_poll', { session_id: session });
  assert.deepEqual(warningsOf(ok.result), []);
  assert.equal(ok.data.session_id, session);
  const again = await c.client.listTools();
  assert.doesNotMatch(again.tools.find((t) => t.name === 'reasonix_list').description, /RELOADED/);

  // A module that holds state is not swapped; agentd (which watches its dirs) says so instead.
  const sessionFile = join(fx.lua, 'rmcp', 'agentd', 'session', 'init.lua');
  write(sessionFile, readFileSync(sessionFile, 'utf8') + '-- edited by reload.test.mjs\n');
  const agentdLog = join(fx.sb.mcp, 'agentd.log');
  await until(() => readFileSync(agentdLog, 'utf8').includes('session/init.lua changed, but rmcp.agentd.session holds state'),
    5000, 'agentd to notice the session/init.lua edit');
  const told = await callTool(c.client, 'reasonix_poll', { session_id: session });
  assert.match(warningsOf(told.result).join('\n'), /not hot-reloaded: it takes effect when agentd restarts/);
  await tool(c.client, 'reasonix_stop', { session_id: session });
});
