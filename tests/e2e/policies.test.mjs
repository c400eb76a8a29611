// The examples/ directory, each run as a user would (issue #5): policies 1-5 copied into a private
// $REASONIX_MCP_HOME/policy/ while the server and agentd run (hot reload picks each up on the next
// call and drops it when removed), against the real agent on the offline provider; example 6, the
// demo orchestrator, as `reasonix-mcp script examples/demo_fleet.lua` with a private HOME.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  REPO, BIN, RUN_ID, useFixture, tool, callTool, agentBin, watchUntil, withTimeout, until,
} from './helpers.mjs';

const BIG = 'The quick brown fox jumps over the lazy dog. '.repeat(70); // ~3150 bytes
const scenario = {
  rules: [
    { name: 'ex1-write', last_role: 'user', user_contains: 'EX1-WRITE',
      tool_calls: [{ name: 'write_file', arguments: { path: 'notes/in.txt', content: 'inside\n' } }] },
    { name: 'ex1-rm', last_role: 'user', user_contains: 'EX1-RM', tool_calls: [{ name: 'bash', arguments: { command: 'rm -rf build' } }] },
    { name: 'ex1-echo', last_role: 'user', user_contains: 'EX1-ECHO', tool_calls: [{ name: 'bash', arguments: { command: 'echo hi > greeting.txt' } }] },
    { name: 'after-write', last_tool_name: 'write_file', text: 'write result: ', echo: 'tool_result' },
    { name: 'after-bash', last_tool_name: 'bash', text: 'bash result: ', echo: 'tool_result' },
    { name: 'ex4-big', last_role: 'user', user_contains: 'EX4-BIG', text: BIG, chunk: 50 },
  ],
  default: { text: 'done' },
};

const fx = useFixture({ scenario }, (f) => {
  mkdirSync(f.sb.mcp, { recursive: true, mode: 0o700 });
  f.policyDir = join(f.sb.mcp, 'policy');
  mkdirSync(f.policyDir, { mode: 0o700 });
});

// Installs example files into the policy dir for the duration of fn, then removes them.
async function withExample(files, fn) {
  for (const f of files) copyFileSync(join(REPO, 'examples', f), join(fx.policyDir, f));
  try {
    return await fn();
  } finally {
    for (const f of files) rmSync(join(fx.policyDir, f), { force: true });
  }
}

// A server of this file. Every server shares one orchestrator id; agentd inherits the environment of
// the first one, so the cleanup example's grace (1.2 s) is set for all.
const connect = (name) => fx.connect({
  name, env: fx.env({ REASONIX_MCP_ORCHESTRATOR_ID: 'policies-e2e', REASONIX_MCP_CLEANUP_MINUTES: '0.02' }),
});

// Watches sid once and returns its result (looping past superseded/empty results).
async function watchOne(client, sid) {
  for (;;) {
    const r = await tool(client, 'reasonix_watch', { session_ids: [sid] });
    if (r.results?.[sid]) return r.results[sid];
  }
}

test('example 1 permissions.lua: writes inside cwd approved, rm -rf denied, the rest passed on', async () => {
  await withExample(['permissions.lua'], async () => {
    const c = await connect('ex1');
    const { client } = c;
    const opts = { tool_approval: 'ask' };
    const write = await tool(client, 'reasonix_spawn', { task: 'EX1-WRITE a note', ...opts });
    const rm = await tool(client, 'reasonix_spawn', { task: 'EX1-RM clean up', ...opts });
    const echo = await tool(client, 'reasonix_spawn', { task: 'EX1-ECHO say hi', ...opts });

    const note = await c.waitEvent((e) => e.session_id === write.session_id && e.event === 'status' && /^policy /.test(e.note));
    assert.match(note.note, /^policy permissions\.lua: approve write_file/, 'the orchestrator is told');
    await c.waitEvent((e) => e.session_id === write.session_id && e.event === 'turn_end');
    const polled = await tool(client, 'reasonix_poll', { session_id: write.session_id, detail: true });
    const auto = polled.events.find((e) => e.type === 'permission_auto');
    assert.equal(auto?.decision, 'approve', 'poll shows the automatic decision');
    assert.equal(auto.policy, 'permissions.lua');
    assert.match(auto.tool_call.title, /^write_file/);
    const w = await watchOne(client, write.session_id);
    assert.equal(w.permission_request, undefined, 'approved by the policy, never asked');
    assert.equal(w.stop_reason, 'end_turn');
    assert.equal(readFileSync(join(fx.sb.ws, 'notes', 'in.txt'), 'utf8'), 'inside\n');
    const wt = await tool(client, 'reasonix_transcript', { session_id: write.session_id });
    assert.equal(wt.policy_decisions.length, 1);
    assert.equal(wt.policy_decisions[0].decision, 'approve');
    assert.equal(wt.policy_decisions[0].option_id, 'allow_once');
    assert.equal(wt.policy_decisions[0].policy, 'permissions.lua');

    const r = await watchOne(client, rm.session_id);
    assert.equal(r.permission_request, undefined, 'denied by the policy, never asked');
    assert.equal(r.stop_reason, 'end_turn');
    assert.match(r.message, /blocked|declined/i, 'the agent was told');
    const rt = await tool(client, 'reasonix_transcript', { session_id: rm.session_id });
    assert.equal(rt.policy_decisions[0].decision, 'deny');
    assert.equal(rt.policy_decisions[0].option_id, 'reject_once');
    assert.match(rt.policy_decisions[0].reason, /rm -rf build/);

    const e = await watchOne(client, echo.session_id);
    assert.equal(e.permission_request?.tool_call?.title, 'bash echo hi > greeting.txt', 'passed on to the orchestrator');
    const pending = await tool(client, 'reasonix_poll', { session_id: echo.session_id, detail: true });
    assert.ok(!pending.events.some((x) => x.type === 'permission_auto'));
    await tool(client, 'reasonix_respond_permission', { session_id: echo.session_id, option_id: 'reject_once' });
    const done = await watchOne(client, echo.session_id);
    assert.equal(done.stop_reason, 'end_turn');
  });
});

test('example 2 fanout_tool.lua: reasonix_fanout spawns one agent per task and returns the ids', async () => {
  const c = await connect('ex2');
  let changed = 0;
  c.client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed += 1; });
  assert.ok(!(await c.client.listTools()).tools.some((t) => t.name === 'reasonix_fanout'));
  await withExample(['fanout_tool.lua'], async () => {
    const listed = await c.client.listTools();
    const fanout = listed.tools.find((t) => t.name === 'reasonix_fanout');
    assert.ok(fanout, 'the policy tool is listed from the next call on');
    assert.deepEqual(fanout.inputSchema.required, ['tasks']);
    assert.equal(changed, 1, 'tools/list_changed was sent');
    const r = await tool(c.client, 'reasonix_fanout', { tasks: ['EX2 part one', 'EX2 part two', 'EX2 part three'] });
    assert.equal(r.session_ids.length, 3);
    assert.deepEqual(r.failed, []);
    const results = await watchUntil(c.client, r.session_ids);
    for (const sid of r.session_ids) assert.equal(results[sid].stop_reason, 'end_turn', sid);
    const bad = await callTool(c.client, 'reasonix_fanout', { tasks: [] });
    assert.equal(bad.result.isError, true, 'arguments are checked against the policy tool\'s inputSchema');
  });
  const after = await c.client.listTools();
  assert.ok(!after.tools.some((t) => t.name === 'reasonix_fanout'), 'removing the file removes the tool');
});

test('example 3 idle_cleanup.lua: idle agents are stopped and reported, keep_alive ones stay', async () => {
  const c = await connect('ex3');
  const idle = await tool(c.client, 'reasonix_spawn', { task: 'EX3 finish quickly' });
  const kept = await tool(c.client, 'reasonix_spawn', { task: 'EX3 stay around', keep_alive: true });
  await c.waitEvent((e) => e.session_id === idle.session_id && e.event === 'turn_end');
  const keptEnd = await c.waitEvent((e) => e.session_id === kept.session_id && e.event === 'turn_end');
  // The policy arrives while both agents are idle and no call is made: agentd's watcher reloads it
  // and re-arms the idle timers (the time already spent idle counts).
  await withExample(['idle_cleanup.lua'], async () => {
    const since = Date.now();
    const notice = await c.waitEvent((e) => e.session_id === idle.session_id && /^cleanup: /.test(e.note ?? ''), 20000, 'cleanup notice');
    assert.match(notice.note, /idle for 0\.02 min without keep_alive \(idle_cleanup\.lua\)/);
    const exit = await c.waitEvent((e) => e.session_id === idle.session_id && e.event === 'process_exited', 20000, 'cleanup exit');
    assert.equal(exit.note, 'cleaned_up');
    assert.equal(keptEnd.status, 'idle');
    // No event says "not cleaned up": give the keep_alive agent the same grace and look.
    await new Promise((r) => setTimeout(r, Math.max(0, since + 1600 - Date.now())));
    const list = await tool(c.client, 'reasonix_list', {});
    const row = (sid) => list.sessions.find((s) => s.session_id === sid);
    assert.equal(row(idle.session_id).status, 'exited');
    assert.equal(row(idle.session_id).exit_reason, 'cleaned_up');
    assert.equal(row(kept.session_id).status, 'idle', 'keep_alive is never cleaned up');
    await tool(c.client, 'reasonix_stop', { session_id: kept.session_id });
  });
});

test('example 4 small_caps.lua: watch and poll results obey the tight caps and say so', async () => {
  await withExample(['small_caps.lua'], async () => {
    const { client } = await connect('ex4');
    const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'EX4-BIG long answer' });
    await tool(client, 'reasonix_wait', { session_ids: [sid] });
    let detail;
    for (;;) { // poll the growing answer until its turn ended (wait wakes on every chunk)
      detail = await tool(client, 'reasonix_poll', { session_id: sid, detail: true });
      if (detail.turns.length) break;
      await tool(client, 'reasonix_wait', { session_ids: [sid], timeout: 5 });
    }
    assert.ok(detail.text.length <= 2000, `text delta capped: ${detail.text.length}`);
    assert.ok(detail.events.length <= 8, `event tail capped: ${detail.events.length}`);
    const capped = await tool(client, 'reasonix_poll', { session_id: sid, detail: true, max_events: 100 });
    assert.ok(capped.events.length <= 20, 'max_events_cap');
    const w = await watchOne(client, sid);
    assert.equal(w.message_truncated, true);
    assert.ok(w.message.length < 700 && w.message.length >= 600, `watch message capped at 600: ${w.message.length}`);
  });
});

test('example 5 agent_wrapper.lua: agents start through the wrapper script', async () => {
  await withExample(['agent_wrapper.lua', 'agent-wrapper.sh'], async () => {
    chmodSync(join(fx.policyDir, 'agent-wrapper.sh'), 0o755);
    const { client } = await connect('ex5');
    const r = await tool(client, 'reasonix_spawn', { task: 'EX5 wrapped agent' });
    assert.notEqual(r.posture.sandbox, 'unknown', 'the posture probe ran through the wrapper too');
    const w = await watchOne(client, r.session_id);
    assert.equal(w.stop_reason, 'end_turn');
    const log = readFileSync(join(fx.sb.mcp, 'agent-wrapper.log'), 'utf8');
    assert.ok(log.includes(`argv=${agentBin()} acp`), log);
    assert.ok(log.includes(`argv=${agentBin()} doctor --json`), log);
    assert.ok(readFileSync(join(fx.sb.mcp, 'agentd.log'), 'utf8').includes(`agent-wrapper.sh ${agentBin()} acp`));
  });
});

test('example 6 demo_fleet.lua: the demo orchestrator runs a fleet on the offline provider', async () => {
  const home = join(fx.sb.root, 'demo-home');
  mkdirSync(home, { mode: 0o700 });
  const child = spawn(BIN, ['script', join(REPO, 'examples', 'demo_fleet.lua')], {
    cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: home, RMCP_DEMO_OFFLINE: '1', REASONIX_BIN: agentBin(), RMCP_E2E_RUN: RUN_ID, TMPDIR: '/tmp' },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { err += d; });
  const [code] = await withTimeout(once(child, 'exit'), 60000, 'the demo');
  assert.equal(code, 0, `demo failed: ${err}\n${out}`);
  const lines = out.trim().split('\n');
  assert.match(lines[0], /^== no provider configured: starting the offline provider/);
  assert.match(lines[1], /^== connected to reasonix-mcp \S+ \(MCP 2025-06-18\)$/);
  for (const name of ['notes', 'client', 'scan']) {
    assert.ok(lines.some((l) => new RegExp(`^spawned ${name} +rx-[0-9a-f]{12}  model=mock/mock-model approval=auto`).test(l)), name);
  }
  assert.ok(lines.includes('steered scan: delivered as steer'), out);
  assert.ok(lines.some((l) => /^client +asks: Which HTTP library should the client use\? -> answering "curl - battle-tested"$/.test(l)), out);
  assert.ok(lines.some((l) => /^notes +idle \(end_turn\): Release notes drafted/.test(l)), out);
  assert.ok(lines.some((l) => /^client +idle \(end_turn\): Going ahead with the answer: The user answered: - Library: curl/.test(l)), out);
  assert.ok(lines.some((l) => /^scan +idle \(end_turn\): .*Steer received: switching the output to a table\.$/.test(l)), out);
  assert.equal(lines.at(-1), '== fleet: 3 session(s): idle=3');
  assert.ok(!existsSync(join(home, '.reasonix-mcp')), 'the demo kept to its own temp dir');
  // Everything the demo starts (server, agentd, agents, provider) carries this file's run marker;
  // the fixture's own processes are told apart by their MCP home or sandbox paths.
  const mine = () => readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid).filter((p) => {
    try {
      const env = readFileSync(`/proc/${p}/environ`, 'latin1');
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'latin1');
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${p}/stat`, 'latin1'))) return false;
      return env.includes(`RMCP_E2E_RUN=${RUN_ID}\0`) && !env.includes(`REASONIX_MCP_HOME=${fx.sb.mcp}\0`) && !cmd.includes(fx.sb.root);
    } catch { return false; }
  });
  await until(() => mine().length === 0, 10000, 'the demo\'s processes to exit');
});
