// The launcher (`reasonix-mcp` with no subcommand) from the host's side, through the official SDK
// client: a server killed mid-watch is invisible (the watch still returns), replacing the binary and
// reasonix_restart_mcp_server swap the server while calls keep working, a mutating call lost to a
// crash gets a clear error and a repeatable one is sent again, a broken upgrade keeps the old server
// and a crash loop ends in errors and exit instead of a hang, and closing stdin ends launcher and
// server. No process may be left.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, chmodSync, renameSync, writeFileSync, readFileSync, readlinkSync, rmSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { useFixture, tool, withTimeout, rawServer, alive, until, agentdPid, watchUntil, BIN } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'hold', last_role: 'user', user_contains: 'HOLD-TASK', delay_first: 2, text: 'held reply' },
    { name: 'quick', last_role: 'user', user_contains: 'QUICK-TASK', text: 'quick reply' },
    { name: 'write', last_role: 'user', user_contains: 'WRITE-TASK', tool_calls: [{ name: 'write_file', arguments: { path: 'perm.txt', content: 'PERM\n' } }] },
    { name: 'after-write', last_tool_name: 'write_file', echo: 'tool_result', text: 'WRITE RESULT: ' },
  ],
};

const fx = useFixture({ scenario });

// The live server children of a launcher (its main thread forks them).
function serverPids(launcherPid) {
  try {
    return readFileSync(`/proc/${launcherPid}/task/${launcherPid}/children`, 'utf8')
      .trim().split(/\s+/).filter(Boolean).map(Number).filter(alive);
  } catch { return []; }
}

// The one server child of a launcher (waits until exactly one is alive: a swap may be finishing).
async function serverPid(launcherPid) {
  await until(() => serverPids(launcherPid).length === 1, 10000, 'one server child');
  return serverPids(launcherPid)[0];
}

// Connects an SDK client to the launcher at `command` (default: the build's binary). Like
// fx.connect, it collects the launcher's notifications/message events (data.event) for waitEvent.
async function connectLauncher(t, { command = BIN, name = 'launcher-e2e', env } = {}) {
  const transport = new StdioClientTransport({ command, args: [], env: env ?? fx.env(), cwd: fx.sb.ws, stderr: 'pipe' });
  const stderr = [];
  transport.stderr?.on('data', (d) => stderr.push(String(d)));
  // set before connect: the client chains its own onclose after ours
  const gone = new Promise((resolve) => { transport.onclose = resolve; });
  const client = new Client({ name, version: '1.0.0' }, { capabilities: {} });
  const events = [];
  const waiters = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    const ev = n.params?.data?.event;
    if (!ev) return;
    events.push(ev);
    for (const w of [...waiters]) if (w.pred(ev)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(ev); }
  });
  const waitEvent = (pred, ms = 30000, what = 'launcher event') => {
    const seen = events.find(pred);
    if (seen) return Promise.resolve(seen);
    return withTimeout(new Promise((resolve) => waiters.push({ pred, resolve })), ms, what);
  };
  await withTimeout(client.connect(transport), 15000, 'MCP initialize through the launcher');
  t.after(() => client.close().catch(() => {}));
  return { client, transport, stderr, events, waitEvent, pid: transport.pid, gone };
}

// Starts a watch on sid that reports progress; resolves `live` at the first progress (the watch is
// blocked in agentd through the current server).
function watchWithProgress(client, sid) {
  let gotProgress;
  const live = new Promise((r) => { gotProgress = r; });
  const result = client.callTool({ name: 'reasonix_watch', arguments: { session_ids: [sid] } }, undefined, {
    timeout: 120000, resetTimeoutOnProgress: true, onprogress: (p) => gotProgress(p),
  });
  return { live: withTimeout(live, 10000, 'first watch progress'), result };
}

const progressEnv = () => fx.env({ REASONIX_MCP_PROGRESS_INTERVAL_MS: '100' });

test('killing the server child mid-watch is invisible: the launcher restarts it and the watch returns', async (t) => {
  const c = await connectLauncher(t, { name: 'launcher-kill', env: progressEnv() });
  const before = await serverPid(c.pid);
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'HOLD-TASK survive a crash' });
  const w = watchWithProgress(c.client, sid);
  await w.live;
  const t0 = Date.now();
  process.kill(before, 'SIGKILL');
  const ev = await c.waitEvent((e) => e.event === 'mcp_server_restarted', 10000, 'restart after the kill');
  const restartMs = Date.now() - t0;
  assert.equal(ev.old_pid, before);
  assert.notEqual(ev.new_pid, before);
  const r = await withTimeout(w.result, 60000, 'the watch answered by the new server');
  assert.notEqual(r.isError, true, JSON.stringify(r));
  assert.equal(r.structuredContent.results[sid].stop_reason, 'end_turn');
  assert.match(r.structuredContent.results[sid].message, /held reply/);
  assert.equal(await serverPid(c.pid), ev.new_pid);
  assert.ok(!alive(before));
  const log = c.stderr.join('');
  assert.match(log, new RegExp(`MCP server pid ${before} exited unexpectedly \\(signal 9\\)`));
  assert.match(log, /1 request\(s\) will be sent again/);
  t.diagnostic(`kill -> new server took over in ${restartMs} ms`);
});

// Connects a launcher whose server is linked to agentd, then stops agentd (SIGSTOP), so that a call
// the test makes next stays in flight; returns the connection, agentd's pid and the server's pid.
async function withAgentdStopped(t, name) {
  const c = await connectLauncher(t, { name });
  await tool(c.client, 'reasonix_list', {}); // starts agentd and links the server to it
  const daemon = agentdPid(fx.sb);
  assert.ok(daemon, 'agentd runs');
  const server = await serverPid(c.pid);
  process.kill(daemon, 'SIGSTOP');
  return { c, daemon, server };
}

test('a mutating call in flight when the server dies gets a clear JSON-RPC error; the client keeps working', async (t) => {
  const { c, daemon, server } = await withAgentdStopped(t, 'launcher-mutating'); // the spawn below is not answered
  try {
    const call = c.client.callTool({ name: 'reasonix_spawn', arguments: { task: 'QUICK-TASK never answered' } }, undefined, { timeout: 30000 });
    call.catch(() => {});
    await c.client.ping(); // answered after the launcher forwarded the spawn (one ordered stream)
    process.kill(server, 'SIGKILL');
    await assert.rejects(call, (err) => {
      assert.equal(err.code, -32000);
      assert.match(err.message, /reasonix_spawn: the MCP server restarted while this call was in flight \(it exited: signal 9\); check reasonix_list\/reasonix_poll before retrying/);
      return true;
    });
  } finally {
    process.kill(daemon, 'SIGCONT');
  }
  const tools = await c.client.listTools();
  assert.equal(tools.tools.length, 17);
  const listed = await tool(c.client, 'reasonix_list', {});
  assert.ok(Array.isArray(listed.sessions));
  assert.notEqual(await serverPid(c.pid), server);
});

test('a repeatable call in flight when the server dies is sent again to the next server and answered once', async (t) => {
  const { c, daemon, server } = await withAgentdStopped(t, 'launcher-repeat'); // this server cannot answer the list
  let stopped = true;
  try {
    const call = c.client.callTool({ name: 'reasonix_list', arguments: {} }, undefined, { timeout: 30000 });
    await c.client.ping(); // answered after the launcher forwarded the list (one ordered stream)
    process.kill(server, 'SIGKILL');
    await until(() => serverPids(c.pid).some((p) => p !== server), 10000, 'a new server child');
    process.kill(daemon, 'SIGCONT');
    stopped = false;
    const listed = await call;
    assert.ok(!listed.isError, JSON.stringify(listed));
    assert.ok(Array.isArray(listed.structuredContent.sessions));
  } finally {
    if (stopped) process.kill(daemon, 'SIGCONT');
  }
  assert.equal((await c.client.listTools()).tools.length, 17);
});

test('reasonix_restart_mcp_server swaps the server; a watch in flight moves to the new one', async (t) => {
  const c = await connectLauncher(t, { name: 'launcher-restart', env: progressEnv() });
  const before = await serverPid(c.pid);
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'HOLD-TASK survive a restart' });
  const w = watchWithProgress(c.client, sid);
  await w.live;
  const t0 = Date.now();
  const r = await tool(c.client, 'reasonix_restart_mcp_server', {});
  assert.equal(r.restarting, true);
  const ev = await c.waitEvent((e) => e.event === 'mcp_server_restarted', 10000, 'the swap');
  const swapMs = Date.now() - t0;
  assert.equal(ev.old_pid, before);
  assert.match(ev.reason, /reasonix_restart_mcp_server/);
  await until(() => !alive(before), 10000, 'the old server stops once drained');
  const got = await withTimeout(w.result, 60000, 'the watch answered by the new server');
  assert.equal(got.structuredContent.results[sid].stop_reason, 'end_turn');
  assert.equal((await c.client.listTools()).tools.length, 17);
  const listed = await tool(c.client, 'reasonix_list', {});
  assert.ok(listed.sessions.some((s) => s.session_id === sid), 'same orchestrator, same sessions');
  assert.equal(await serverPid(c.pid), ev.new_pid);
  assert.doesNotMatch(c.stderr.join(''), /exited unexpectedly/);
  t.diagnostic(`restart call -> new server took over in ${swapMs} ms`);
});

test('replacing the binary (cp + mv over it) swaps the server while the client keeps working', async (t) => {
  const exe = join(fx.sb.bin, 'reasonix-mcp');
  copyFileSync(BIN, exe);
  chmodSync(exe, 0o755);
  const c = await connectLauncher(t, { command: exe, name: 'launcher-upgrade', env: progressEnv() });
  const before = await serverPid(c.pid);
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'HOLD-TASK survive an upgrade' });
  const w = watchWithProgress(c.client, sid);
  await w.live;
  const tmp = join(fx.sb.bin, '.reasonix-mcp.new');
  copyFileSync(BIN, tmp);
  chmodSync(tmp, 0o755);
  const t0 = Date.now();
  renameSync(tmp, exe);
  const ev = await c.waitEvent((e) => e.event === 'mcp_server_restarted', 10000, 'the swap after the upgrade');
  const swapMs = Date.now() - t0;
  assert.equal(ev.old_pid, before);
  assert.match(ev.reason, /binary changed/);
  assert.equal(readlinkSync(`/proc/${ev.new_pid}/exe`), exe, 'the new server runs the new file');
  assert.match(readlinkSync(`/proc/${c.pid}/exe`), /\(deleted\)$/, 'the launcher itself still runs the old one');
  const got = await withTimeout(w.result, 60000, 'the watch answered across the upgrade');
  assert.equal(got.structuredContent.results[sid].stop_reason, 'end_turn');
  assert.equal((await c.client.listTools()).tools.length, 17);
  await tool(c.client, 'reasonix_list', {});
  await until(() => !alive(before), 10000, 'the old server is gone');
  assert.equal(await serverPid(c.pid), ev.new_pid);
  t.diagnostic(`rename over the binary -> new server took over in ${swapMs} ms`);
});

test('an install behind a symlink: repointing the symlink swaps the server to the new target', async (t) => {
  const v1 = join(fx.sb.bin, 'v1', 'reasonix-mcp');
  const v2 = join(fx.sb.bin, 'v2', 'reasonix-mcp');
  for (const f of [v1, v2]) { mkdirSync(join(f, '..'), { recursive: true }); copyFileSync(BIN, f); chmodSync(f, 0o755); }
  const link = join(fx.sb.bin, 'reasonix-mcp-link');
  symlinkSync(v1, link);
  const c = await connectLauncher(t, { command: link, name: 'launcher-symlink' });
  const before = await serverPid(c.pid);
  assert.equal(readlinkSync(`/proc/${before}/exe`), v1);
  const tmp = join(fx.sb.bin, '.link.new');
  symlinkSync(v2, tmp);
  renameSync(tmp, link);
  const ev = await c.waitEvent((e) => e.event === 'mcp_server_restarted', 10000, 'the swap after repointing');
  assert.equal(ev.old_pid, before);
  assert.equal(readlinkSync(`/proc/${ev.new_pid}/exe`), v2, 'the new server runs the new target');
  assert.equal((await c.client.listTools()).tools.length, 17);
});

test('a broken upgrade keeps the old server; a crash then ends in errors and exit, not a hang', async (t) => {
  const exe = join(fx.sb.bin, 'reasonix-mcp-broken');
  copyFileSync(BIN, exe);
  chmodSync(exe, 0o755);
  const env = fx.env({ REASONIX_MCP_LAUNCHER_BACKOFF_MS: '50', REASONIX_MCP_PROGRESS_INTERVAL_MS: '100' });
  const c = await connectLauncher(t, { command: exe, name: 'launcher-broken', env });
  const before = await serverPid(c.pid);
  await tool(c.client, 'reasonix_list', {}); // agentd runs before the file breaks (it starts from the server's path)
  const tmp = join(fx.sb.bin, '.broken.new');
  writeFileSync(tmp, '#!/bin/sh\necho "broken build" >&2\nexit 3\n', { mode: 0o755 });
  renameSync(tmp, exe);
  const failed = await c.waitEvent((e) => e.event === 'mcp_server_swap_failed', 10000, 'the failed swap');
  assert.match(failed.error, /exit code 3/);
  assert.equal(await serverPid(c.pid), before, 'the old server keeps serving');
  assert.equal((await c.client.listTools()).tools.length, 17);
  // Now the old server dies: every restart runs the broken file, so the launcher gives up.
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'HOLD-TASK never watched to the end' });
  const w = watchWithProgress(c.client, sid);
  await w.live;
  const t0 = Date.now();
  process.kill(before, 'SIGKILL');
  await assert.rejects(w.result, (err) => {
    assert.equal(err.code, -32000);
    assert.match(err.message, /reasonix_watch: the MCP server keeps exiting \(5 times in a row/);
    return true;
  });
  await withTimeout(c.gone, 10000, 'the launcher exits after giving up');
  const giveUpMs = Date.now() - t0;
  assert.match(c.stderr.join(''), /launcher\[\d+\] error: the MCP server keeps exiting/);
  await until(() => !alive(c.pid), 5000, 'launcher gone');
  t.diagnostic(`kill with a broken binary -> gave up and exited in ${giveUpMs} ms`);
});

test('an elicitation form reaches the host through the launcher; a replaced server\'s open form is withdrawn', async () => {
  const forms = [];
  let formOpen;
  const opened = new Promise((r) => { formOpen = r; });
  let aborted;
  const withdrawn = new Promise((r) => { aborted = r; });
  const c = await fx.connect({
    name: 'launcher-elicit', args: [],
    // first form: left open until the launcher withdraws it; later ones: accepted
    elicit: async (req, extra) => {
      forms.push(req.params);
      if (forms.length > 1) return { action: 'accept', content: { option: 'allow_once' } };
      formOpen();
      await new Promise((r) => extra.signal.addEventListener('abort', () => { aborted(extra.signal.reason); r(); }));
      return { action: 'cancel' };
    },
  });
  const finished = (r) => r.status !== 'running' && r.status !== 'starting' && r.status !== 'awaiting_decision' && !r.permission_request;
  rmSync(join(fx.sb.ws, 'perm.txt'), { force: true });
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'WRITE-TASK one', tool_approval: 'ask' });
  await withTimeout(opened, 30000, 'the first form');
  assert.match(forms[0].message, /permission.*write_file/);
  await tool(c.client, 'reasonix_restart_mcp_server', {});
  await withTimeout(withdrawn, 10000, 'the open form withdrawn after the swap');
  // the decision is still pending in agentd: watch reports it, respond_permission answers it
  const { results } = await tool(c.client, 'reasonix_watch', { session_ids: [sid] });
  const pr = results[sid].permission_request;
  assert.ok(pr, JSON.stringify(results[sid]));
  await tool(c.client, 'reasonix_respond_permission', { session_id: sid, option_id: 'allow_once', request_id: pr.request_id });
  assert.equal((await watchUntil(c.client, [sid], finished))[sid].stop_reason, 'end_turn');
  // the new server's own form (its ids start over) is answered by the host and routed back to it
  rmSync(join(fx.sb.ws, 'perm.txt'), { force: true });
  const { session_id: sid2 } = await tool(c.client, 'reasonix_spawn', { task: 'WRITE-TASK two', tool_approval: 'ask' });
  assert.equal((await watchUntil(c.client, [sid2], finished))[sid2].stop_reason, 'end_turn');
  assert.equal(forms.length, 2);
  assert.equal(readFileSync(join(fx.sb.ws, 'perm.txt'), 'utf8'), 'PERM\n');
});

test('stdin close ends the launcher and its server (exit 0); SIGTERM does too', async () => {
  for (const how of ['stdin', 'SIGTERM']) {
    const srv = rawServer(fx.sb, { args: [] });
    const init = await srv.initialize({ clientInfo: { name: `launcher-${how}`, version: '1' } });
    assert.equal(init.result.protocolVersion, '2025-11-25');
    assert.deepEqual((await srv.request('ping')).result, {});
    const server = await serverPid(srv.child.pid);
    if (how === 'stdin') srv.child.stdin.end(); else srv.child.kill('SIGTERM');
    const [code, signal] = await withTimeout(srv.exited, 10000, `launcher exit after ${how}`);
    assert.equal(code, 0, `${how}: exit code`);
    assert.equal(signal, null);
    await until(() => !alive(server), 5000, `${how}: the server child is gone`);
    assert.deepEqual(srv.badLines, [], 'stdout carried only protocol');
    // (the exit event can come before the last of stderr is read)
    const line = new RegExp(`server pid ${server} exited \\(exit code 0\\)`);
    await until(() => line.test(srv.stderr.join('')), 5000, `${how}: the launcher's line on the server's exit`);
  }
});
