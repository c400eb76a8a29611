// Watch safety (the spec's selftest_watch.py): a newer watch supersedes an older one at once; a
// cancelled watch is released in agentd and loses nothing; progress while blocked; timeouts; an
// undelivered terminal state survives a server kill and is returned by the next watch.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, tool, withTimeout } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'hold', last_role: 'user', user_contains: 'HOLD-TASK', delay_first: 3, text: 'held reply' }, // long enough for a slow build's calls
    { name: 'quick', last_role: 'user', user_contains: 'QUICK-TASK', text: 'quick reply' },
  ],
};

const fx = useFixture({ scenario });

test('a newer watch on the same session supersedes the older one at once', async () => {
  const { client } = await fx.connect({ name: 'watch-overlap' });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'HOLD-TASK overlap' });
  const first = tool(client, 'reasonix_watch', { session_ids: [sid] });
  // Make sure the first watch is registered in agentd before the second one starts.
  const timed = await tool(client, 'reasonix_watch', { session_ids: [sid], timeout: 0.05 });
  assert.equal(timed.timed_out, true, 'a running session times out a short watch');
  const old = await withTimeout(first, 5000, 'superseded watch returns at once');
  assert.equal(old.superseded, true);
  assert.deepEqual(old.results, {});
  const second = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  assert.equal(second.results[sid].stop_reason, 'end_turn');
  assert.match(second.results[sid].message, /held reply/);
});

test('a cancelled watch is released, reports progress while blocked, and loses no terminal state', async () => {
  const c = await fx.connect({ name: 'watch-cancel', env: fx.env({ REASONIX_MCP_PROGRESS_INTERVAL_MS: '100' }) });
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'HOLD-TASK cancel me' });
  const abort = new AbortController();
  const progress = [];
  let gotProgress;
  const firstProgress = new Promise((r) => { gotProgress = r; });
  const watching = c.client.callTool({ name: 'reasonix_watch', arguments: { session_ids: [sid] } }, undefined, {
    signal: abort.signal, resetTimeoutOnProgress: true,
    onprogress: (p) => { progress.push(p); gotProgress(p); },
  });
  const p = await withTimeout(firstProgress, 5000, 'progress notification while the watch blocks');
  assert.equal(typeof p.progress, 'number');
  assert.match(p.message, /watching 1 session/);
  abort.abort('test cancels the watch');
  await assert.rejects(watching, /abort|cancel/i);
  // The cancelled watch is gone in agentd: a new watch is not superseding anything and gets the turn.
  const again = await tool(c.client, 'reasonix_watch', { session_ids: [sid] });
  assert.equal(again.superseded, undefined);
  assert.equal(again.results[sid].stop_reason, 'end_turn');
  const log = c.stderr.join('');
  assert.match(log, /client cancelled reasonix_watch/);
});

test('an undelivered terminal state survives a server kill; the next server returns it', async () => {
  const a = await fx.connect({ name: 'watch-restart' });
  const { session_id: sid } = await tool(a.client, 'reasonix_spawn', { task: 'QUICK-TASK finish while nobody watches' });
  await a.waitEvent((e) => e.session_id === sid && e.event === 'turn_end', 60000, 'turn_end');
  process.kill(a.pid, 'SIGKILL');
  await withTimeout(new Promise((r) => a.transport.onclose = r), 5000, 'server A gone');
  const b = await fx.connect({ name: 'watch-restart' });
  const listed = await tool(b.client, 'reasonix_list', { pending_only: true });
  assert.ok(listed.sessions.some((s) => s.session_id === sid), 'the new server sees the session with its pending result');
  const got = await withTimeout(tool(b.client, 'reasonix_watch', { session_ids: [sid] }), 5000, 'pending result at once');
  assert.equal(got.results[sid].stop_reason, 'end_turn');
  assert.match(got.results[sid].message, /quick reply/);
  // Delivered once: now it is no longer pending.
  const after = await tool(b.client, 'reasonix_list', { pending_only: true });
  assert.ok(!after.sessions.some((s) => s.session_id === sid));
});

test('wait reports progress while blocked and returns the ready ids', async () => {
  const c = await fx.connect({ name: 'wait-progress', env: fx.env({ REASONIX_MCP_PROGRESS_INTERVAL_MS: '100' }) });
  const { session_id: sid } = await tool(c.client, 'reasonix_spawn', { task: 'HOLD-TASK wait for me' });
  let gotProgress;
  const firstProgress = new Promise((r) => { gotProgress = r; });
  const waiting = c.client.callTool({ name: 'reasonix_wait', arguments: { session_ids: [sid] } }, undefined, {
    resetTimeoutOnProgress: true, onprogress: (p) => gotProgress(p),
  });
  await withTimeout(firstProgress, 5000, 'progress while wait blocks');
  const r = await waiting;
  assert.deepEqual(r.structuredContent.ready, [sid]);
  await tool(c.client, 'reasonix_stop', { session_id: sid });
});
