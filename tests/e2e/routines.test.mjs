// Routines with the real agent on the offline provider and a clock the test moves (the test seams'
// clock reads a file holding "now"): a manual routine run on demand, with the
// contract injected once and its result recorded; interval and daily schedules firing at their
// times (daily across Europe/Athens's DST change); overlap skip and queue; the machine-wide limit; a
// paused routine run on demand; a run missed while agentd was down run once; a crash between the
// spawn and its record taken up by the run marker with no second spawn; creators isolated; a hot edit
// of the routines' Lua taking effect with the schedule kept; templates; ctl for the person at the
// shell (every routine, a gate answered).
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, cpSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { useFixture, tool, callTool, until, shutdownAgentd, agentdPid, alive, seamsEnv, REPO, BIN } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'plain', last_role: 'user', user_contains: 'ROUTINE-PLAIN', text: 'plain routine report' },
    { name: 'gate', last_role: 'user', user_contains: 'ROUTINE-GATE', tool_calls: [{ name: 'write_file', arguments: { path: 'gate.txt', content: 'G\n' } }] },
    { name: 'after-gate', last_tool_name: 'write_file', text: 'gate routine report' },
    { name: 'continue', last_role: 'user', user_contains: 'daemon running this routine restarted', text: 'continued after the restart' },
  ],
  default: { text: 'default routine reply' },
};
// every process runs a private copy of lua/ (the hot-edit case edits the routines' modules there)
const fx = useFixture({ scenario }, (f) => {
  f.lua = join(f.sb.root, 'lua');
  cpSync(join(REPO, 'lua'), f.lua, { recursive: true });
});
const clockFile = () => join(fx.sb.root, 'clock');
// (written whole, then renamed in: the seams' clock reads the file every 50 ms, and a read between
// a truncation and the write would see no time and fall back to the system clock)
const setClock = (t) => { writeFileSync(clockFile() + '.tmp', `${t}\n`); renameSync(clockFile() + '.tmp', clockFile()); };
const env = (extra = {}) => fx.env({ ...seamsEnv({ clock: clockFile() }), REASONIX_MCP_LUA_DIR: fx.lua, ...extra });
const T0 = 1774600000; // 2026-03-27 10:26:40 UTC, two days before Europe/Athens moves to summer time
let host;

// The caller's routine routine_id as routine_list shows it.
async function routine(client, id, opts = {}) {
  const { routines } = await tool(client, 'reasonix_routine_list', opts);
  return routines.find((r) => r.routine_id === id);
}

// Routine id's run run_id once its session is up. A run the scheduler starts sends no event to
// the host: routine_list is how a host sees it, so this asks it again (bounded) until it shows.
async function runStarted(client, id, runId) {
  const deadline = Date.now() + 30000;
  for (;;) {
    const run = (await routine(client, id)).runs.find((x) => x.run_id === runId);
    if (run && (run.session_id || !['starting'].includes(run.status))) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} did not start within 30 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Waits until routine id's run run_id has ended (its session watched by the creator); returns the run.
async function runEnded(client, id, runId) {
  const run = await runStarted(client, id, runId);
  if (['starting', 'running', 'awaiting_decision'].includes(run.status)) {
    await tool(client, 'reasonix_watch', { session_ids: [run.session_id] });
  }
  return (await routine(client, id, { include_results: true })).runs.find((x) => x.run_id === runId);
}

test('a manual routine runs on demand in a fresh session of its own, contract once, result recorded', async () => {
  setClock(T0);
  host = await fx.connect({ name: 'routine-host', env: env() });
  const c = host.client;
  const made = await tool(c, 'reasonix_routine_create', { name: 'plain', prompt: 'ROUTINE-PLAIN inspect and report' });
  assert.match(made.routine_id, /^rt-[0-9a-f]{8}$/);
  assert.equal(made.schedule, 'manual');
  assert.equal(made.tool_approval, 'auto', 'unattended runs default to auto, not yolo');
  assert.equal(made.next_due, undefined, 'manual: never due');
  const started = await tool(c, 'reasonix_routine_run', { routine_id: made.routine_id });
  assert.equal(started.started, `${made.routine_id}-1`);
  assert.match(started.session_id, /^rx-/);
  const run = await runEnded(c, made.routine_id, started.started);
  assert.equal(run.status, 'done');
  assert.equal(run.trigger, 'manual');
  assert.match(run.result, /plain routine report/);
  const fleet = await tool(c, 'reasonix_list', {});
  assert.ok(!fleet.sessions.some((s) => s.session_id === started.session_id), 'routine runs are not in the host\'s fleet');
  const tr = await tool(c, 'reasonix_transcript', { session_id: started.session_id });
  const prompts = (await fx.provider.requests()).filter((r) => JSON.stringify(r).includes('ROUTINE-PLAIN'));
  assert.ok(prompts.length >= 1);
  const first = JSON.stringify(prompts[0]);
  assert.equal(first.split('[reasonix-mcp routine contract]').length - 1, 1, 'the contract once');
  assert.match(first, /Run marker: routine-run:rt-[0-9a-f]+:1:[0-9a-f]+/);
  assert.ok(tr, 'the creator can read the run\'s transcript');
  // the run is recorded before its agent has stopped (the stop is asynchronous): looked at until
  // it has, for at most 10 s
  let polled;
  for (const deadline = Date.now() + 10000; ;) {
    polled = await tool(c, 'reasonix_poll', { session_id: started.session_id });
    if (polled.status === 'exited' || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(polled.status, 'exited', 'the run\'s session is closed once its result is recorded');
  await tool(c, 'reasonix_routine_delete', { routine_id: made.routine_id });
});

test('interval and daily schedules fire at their times; daily keeps 09:00 local across the DST change', async () => {
  const c = host.client;
  setClock(T0);
  const hourly = await tool(c, 'reasonix_routine_create', { name: 'hourly', prompt: 'ROUTINE-PLAIN hourly', schedule: 'every 1h' });
  assert.equal(hourly.schedule, 'every 1h');
  assert.equal(hourly.next_due, T0 + 3600);
  const daily = await tool(c, 'reasonix_routine_create', { name: 'daily', prompt: 'ROUTINE-PLAIN daily', schedule: 'daily 9:00 Europe/Athens' });
  assert.equal(daily.schedule, 'daily 09:00 Europe/Athens');
  const sat = 1774681200; // 2026-03-28 09:00 EET (+2)
  const sun = 1774764000; // 2026-03-29 09:00 EEST (+3): 23 h later
  assert.equal(daily.next_due, sat);

  setClock(T0 + 3599);
  assert.equal((await routine(c, hourly.routine_id)).runs.length, 0, 'not before its time');
  setClock(T0 + 3600);
  let h = await routine(c, hourly.routine_id);
  assert.equal(h.runs.length, 1, 'at its time');
  assert.equal(h.runs[0].trigger, 'schedule');
  assert.equal(h.next_due, T0 + 7200, 'fixed delay from when it fired');
  assert.equal((await runEnded(c, hourly.routine_id, h.runs[0].run_id)).status, 'done');

  setClock(sat - 1);
  assert.equal((await routine(c, daily.routine_id)).runs.length, 0);
  // the hourly one fell due 14 times meanwhile: it fires once, late, then counts from now
  h = await routine(c, hourly.routine_id);
  assert.equal(h.runs.length, 2, 'missed intervals are not replayed');
  assert.equal(h.runs[0].trigger, 'catch_up');
  assert.equal(h.next_due, sat - 1 + 3600);
  await runEnded(c, hourly.routine_id, h.runs[0].run_id);
  await tool(c, 'reasonix_routine_delete', { routine_id: hourly.routine_id });
  setClock(sat);
  let dd = await routine(c, daily.routine_id);
  assert.equal(dd.runs.length, 1);
  assert.equal(dd.next_due, sun, 'the next 09:00 is 23 h on: Athens moved to summer time');
  await runEnded(c, daily.routine_id, dd.runs[0].run_id);
  setClock(sun);
  dd = await routine(c, daily.routine_id);
  assert.equal(dd.runs.length, 2);
  assert.equal(dd.next_due, sun + 86400);
  await runEnded(c, daily.routine_id, dd.runs[0].run_id);
  await tool(c, 'reasonix_routine_delete', { routine_id: daily.routine_id });
});

// Starts routine id's run (or takes its current one), waits for its permission request through a
// watch, answers it from the creator's tools, and waits for the run's end; returns the run.
async function answerGate(client, id, runId) {
  const run = await runStarted(client, id, runId);
  const w = await tool(client, 'reasonix_watch', { session_ids: [run.session_id] });
  const req = w.results[run.session_id].permission_request;
  assert.ok(req, 'the run waits for an answer (the scheduler never guesses)');
  const listed = (await routine(client, id)).runs.find((x) => x.run_id === runId);
  assert.equal(listed.status, 'awaiting_decision');
  assert.ok(listed.permission_request, 'routine_list shows the waiting request');
  await tool(client, 'reasonix_respond_permission', { session_id: run.session_id, option_id: 'allow_once' });
  return runEnded(client, id, runId);
}

test('overlap: skip records the trigger as skipped; queue keeps triggers and runs them one after another', async () => {
  const c = host.client;
  const skip = await tool(c, 'reasonix_routine_create', { name: 'skipper', prompt: 'ROUTINE-GATE skip', tool_approval: 'ask' });
  const first = await tool(c, 'reasonix_routine_run', { routine_id: skip.routine_id });
  assert.ok(first.started);
  const second = await tool(c, 'reasonix_routine_run', { routine_id: skip.routine_id });
  assert.match(second.skipped, /still active/);
  let r = await routine(c, skip.routine_id);
  assert.equal(r.runs[0].status, 'skipped', 'recorded, newest first');
  assert.equal(r.runs[0].trigger, 'manual');
  assert.ok(['running', 'awaiting_decision'].includes(r.runs[1].status), r.runs[1].status);
  const busy = await callTool(c, 'reasonix_routine_delete', { routine_id: skip.routine_id });
  assert.equal(busy.result.isError, true);
  assert.match(busy.result.content[0].text, /at work; stop it first/);
  assert.equal((await answerGate(c, skip.routine_id, first.started)).status, 'done');

  const queue = await tool(c, 'reasonix_routine_create', { name: 'queuer', prompt: 'ROUTINE-GATE queue', tool_approval: 'ask', overlap: 'queue' });
  const q1 = await tool(c, 'reasonix_routine_run', { routine_id: queue.routine_id });
  assert.ok(q1.started);
  assert.deepEqual(await tool(c, 'reasonix_routine_run', { routine_id: queue.routine_id }), { queued: 1, routine_id: queue.routine_id });
  assert.deepEqual(await tool(c, 'reasonix_routine_run', { routine_id: queue.routine_id }), { queued: 2, routine_id: queue.routine_id });
  assert.equal((await routine(c, queue.routine_id)).queued, 2);
  await answerGate(c, queue.routine_id, q1.started);
  r = await routine(c, queue.routine_id);
  assert.equal(r.queued, 1, 'the next trigger started when the run ended');
  assert.equal(r.current_run, `${queue.routine_id}-2`);
  await answerGate(c, queue.routine_id, `${queue.routine_id}-2`);
  await answerGate(c, queue.routine_id, `${queue.routine_id}-3`);
  r = await routine(c, queue.routine_id);
  assert.deepEqual(r.runs.map((x) => x.status), ['done', 'done', 'done']);
  assert.equal(r.queued, 0);
  for (const x of [skip, queue]) await tool(c, 'reasonix_routine_delete', { routine_id: x.routine_id });
});

// Replaces the host with one whose agentd (started afresh) runs with extra in its environment.
async function restartWith(extra) {
  await host.close();
  await shutdownAgentd(fx.sb);
  host = await fx.connect({ name: 'routine-host', env: env(extra) });
}

test('a run missed while agentd was down runs once when it is back; the machine-wide limit makes the other wait', async () => {
  const c = host.client;
  const t1 = T0 + 10 * 86400;
  setClock(t1);
  const a = await tool(c, 'reasonix_routine_create', { name: 'a', prompt: 'ROUTINE-GATE a', tool_approval: 'ask', schedule: 'every 1h' });
  const b = await tool(c, 'reasonix_routine_create', { name: 'b', prompt: 'ROUTINE-GATE b', tool_approval: 'ask', schedule: 'every 1h' });
  await host.close();
  await shutdownAgentd(fx.sb);
  setClock(t1 + 5 * 3600); // five hours with no agentd
  host = await fx.connect({ name: 'routine-host', env: env({ REASONIX_MCP_ROUTINE_CONCURRENCY: '1' }) });
  const c2 = host.client;
  const rows = async () => Promise.all([routine(c2, a.routine_id), routine(c2, b.routine_id)]);
  let [ra, rb] = await rows();
  const [firstUp, waiting] = ra.runs.length === 1 ? [ra, rb] : [rb, ra];
  assert.equal(firstUp.runs.length, 1, 'one ran at once');
  assert.equal(firstUp.runs[0].trigger, 'catch_up');
  assert.equal(waiting.runs.length, 0, 'the limit of 1 holds the other');
  assert.equal(waiting.queued, 1);
  assert.equal((await tool(c2, 'reasonix_routine_list', {})).active_runs, 1);
  await answerGate(c2, firstUp.routine_id, firstUp.runs[0].run_id);
  await answerGate(c2, waiting.routine_id, `${waiting.routine_id}-1`);
  [ra, rb] = await rows();
  for (const r of [ra, rb]) {
    assert.deepEqual(r.runs.map((x) => [x.trigger, x.status]), [['catch_up', 'done']], 'five missed hours: one run');
    assert.equal(r.next_due, t1 + 5 * 3600 + 3600, 'the next one counts from the catch-up');
  }
  for (const r of [a, b]) await tool(c2, 'reasonix_routine_delete', { routine_id: r.routine_id });
  await restartWith({});
});

test('a paused routine does not fire, runs on "run now", and counts from then when enabled again', async () => {
  const c = host.client;
  const t2 = T0 + 20 * 86400;
  setClock(t2);
  const r = await tool(c, 'reasonix_routine_create', { name: 'paused', prompt: 'ROUTINE-PLAIN paused', schedule: 'every 2h' });
  const paused = await tool(c, 'reasonix_routine_configure', { routine_id: r.routine_id, enabled: false });
  assert.equal(paused.enabled, false);
  assert.equal(paused.next_due, undefined);
  setClock(t2 + 5 * 3600);
  assert.equal((await routine(c, r.routine_id)).runs.length, 0, 'paused: no scheduled run');
  const now = await tool(c, 'reasonix_routine_run', { routine_id: r.routine_id });
  assert.ok(now.started, 'run now works while paused');
  assert.equal((await runEnded(c, r.routine_id, now.started)).status, 'done');
  const enabled = await tool(c, 'reasonix_routine_configure', { routine_id: r.routine_id, enabled: true });
  assert.equal(enabled.next_due, t2 + 5 * 3600 + 7200, 'enabled again: due an interval from now, nothing replayed');
  await tool(c, 'reasonix_routine_delete', { routine_id: r.routine_id });
});

test('a crash between the spawn and its record: the run finds its session by its marker and goes on; no second spawn', async () => {
  await restartWith(seamsEnv({ clock: clockFile(), fault: 'routine_after_spawn' }));
  const c = host.client;
  const r = await tool(c, 'reasonix_routine_create', { name: 'crash', prompt: 'ROUTINE-PLAIN crash' });
  const pid = agentdPid(fx.sb);
  const died = await callTool(c, 'reasonix_routine_run', { routine_id: r.routine_id });
  assert.equal(died.result.isError, true, 'agentd died under the call');
  await until(() => !alive(pid), 10000, 'the old agentd is gone');
  // the next call starts a fresh agentd, which takes the run up again
  const run = await runEnded(c, r.routine_id, `${r.routine_id}-1`);
  assert.equal(run.status, 'done');
  assert.equal(run.recovered, true);
  assert.match(run.result, /continued after the restart/);
  assert.equal((await routine(c, r.routine_id)).runs.length, 1, 'one run');
  const withMarker = readdirSync(join(fx.sb.mcp, 'sessions')).filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(readFileSync(join(fx.sb.mcp, 'sessions', f), 'utf8')))
    .filter((x) => x.routine && x.routine.run_id === `${r.routine_id}-1`);
  assert.equal(withMarker.length, 1, 'one session carries the run\'s marker: nothing was spawned twice');
  assert.equal(withMarker[0].session_id ?? withMarker[0].id, run.session_id);
  await tool(c, 'reasonix_routine_delete', { routine_id: r.routine_id });
  await restartWith({});
});

test('creators are isolated: another orchestrator neither sees nor touches a routine or its runs', async () => {
  const c = host.client;
  const r = await tool(c, 'reasonix_routine_create', { name: 'mine', prompt: 'ROUTINE-PLAIN mine' });
  const started = await tool(c, 'reasonix_routine_run', { routine_id: r.routine_id });
  await runEnded(c, r.routine_id, started.started);
  const other = await fx.connect({ name: 'other-host', env: env() });
  assert.deepEqual((await tool(other.client, 'reasonix_routine_list', {})).routines, []);
  for (const name of ['reasonix_routine_run', 'reasonix_routine_stop', 'reasonix_routine_delete', 'reasonix_routine_configure']) {
    const res = await callTool(other.client, name, { routine_id: r.routine_id });
    assert.equal(res.result.isError, true, name);
    assert.match(res.result.content[0].text, /unknown routine/, name);
  }
  const poll = await callTool(other.client, 'reasonix_poll', { session_id: started.session_id });
  assert.match(poll.result.content[0].text, /unknown session/);
  assert.equal((await routine(c, r.routine_id)).runs.length, 1, 'untouched');
  await other.close();
  await tool(c, 'reasonix_routine_delete', { routine_id: r.routine_id });
});

// Replaces from by to in the private copy of lua/rmcp/agentd/<rel>, written whole (by rename).
function editLua(rel, from, to) {
  const file = join(fx.lua, 'rmcp', 'agentd', ...rel.split('/'));
  const text = readFileSync(file, 'utf8');
  const edited = text.replace(from, to);
  assert.notEqual(edited, text, `${rel} has ${from}`);
  writeFileSync(file + '.tmp', edited);
  renameSync(file + '.tmp', file);
}

test('a hot edit of the routines\' Lua applies on the next call; the schedule is kept and still fires', async () => {
  const c = host.client;
  const t3 = T0 + 30 * 86400;
  setClock(t3);
  const r = await tool(c, 'reasonix_routine_create', { name: 'reloaded', prompt: 'ROUTINE-PLAIN reloaded', schedule: 'every 1h' });
  // the methods shape the routine's row; the scheduler records the run's end
  editLua('methods/routines.lua', 'runs_total = r.runs_total or 0,', 'runs_total = r.runs_total or 0, methods_edited = true,');
  editLua('routines/scheduler.lua', 'run.transcript_path = s.transcript_path\n',
    'run.transcript_path = s.transcript_path\n    run.result = (run.result or "") .. " [scheduler edited]"\n');
  const after = await routine(c, r.routine_id);
  assert.equal(after.methods_edited, true, 'the edited methods answer');
  assert.equal(after.next_due, t3 + 3600, 'the schedule survived the reload');
  setClock(t3 + 3600);
  const fired = await routine(c, r.routine_id);
  assert.equal(fired.runs.length, 1, 'and fires under the new code');
  const ended = await runEnded(c, r.routine_id, fired.runs[0].run_id);
  assert.equal(ended.status, 'done');
  assert.match(ended.result, / \[scheduler edited\]$/, 'the edited scheduler recorded the run');
  await tool(c, 'reasonix_routine_delete', { routine_id: r.routine_id });
});

test('templates: complete prompts with safe defaults, copied and edited into a routine', async () => {
  const c = host.client;
  const { templates } = await tool(c, 'reasonix_routine_templates', {});
  assert.deepEqual(templates.map((t) => t.template_id), ['issue-maintenance', 'pr-review', 'flaky-tests', 'dead-code-weak-tests',
    'duplicate-unification', 'simplify-and-find-bugs']);
  for (const t of templates) {
    assert.ok(t.prompt.length > 400, `${t.template_id} has a complete prompt`);
    assert.equal(t.tool_approval, 'auto', 'never yolo');
    assert.equal(t.overlap, 'skip');
  }
  const made = await tool(c, 'reasonix_routine_from_template', { template_id: 'flaky-tests', name: 'our flakes', schedule: 'manual' });
  assert.equal(made.name, 'our flakes');
  assert.equal(made.schedule, 'manual');
  assert.equal(made.prompt, templates.find((t) => t.template_id === 'flaky-tests').prompt);
  const bad = await callTool(c, 'reasonix_routine_from_template', { template_id: 'nope' });
  assert.match(bad.result.content[0].text, /unknown template_id nope; the templates: issue-maintenance, pr-review/);
  const wrong = await callTool(c, 'reasonix_routine_create', { name: 'x', prompt: 'y', schedule: 'daily 25:00 Mars/Base' });
  assert.match(wrong.result.content[0].text, /HH:MM between 00:00 and 23:59/);
  await tool(c, 'reasonix_routine_delete', { routine_id: made.routine_id });
  assert.deepEqual((await tool(c, 'reasonix_routine_list', {})).routines.map((x) => x.routine_id).includes(made.routine_id), false);
});

test('ctl: the person at the shell sees every routine, makes one, runs it and answers its gate', async () => {
  const c = host.client;
  const hosts = await tool(c, 'reasonix_routine_create', { name: 'host-made', prompt: 'ROUTINE-PLAIN host' });
  const ctl = (...args) => execFileSync(BIN, ['ctl', ...args], { env: env(), cwd: fx.sb.ws, encoding: 'utf8' });
  const made = JSON.parse(ctl('--json', 'routine', 'create', 'ctl-made', '--prompt', 'ROUTINE-GATE ctl', '--approval', 'ask', '--schedule', 'every 6h'));
  assert.equal(made.schedule, 'every 6h');
  const listed = () => JSON.parse(ctl('--json', 'routine', 'list')).routines;
  assert.deepEqual(listed().map((r) => r.routine_id).sort(), [hosts.routine_id, made.routine_id].sort(), 'every routine, the host\'s too');
  const run = JSON.parse(ctl('--json', 'routine', 'run', made.routine_id));
  assert.ok(run.started);
  const deadline = Date.now() + 30000;
  while (listed().find((r) => r.routine_id === made.routine_id).runs[0].status !== 'awaiting_decision') {
    if (Date.now() > deadline) throw new Error('the ctl routine\'s run never asked');
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.match(ctl('routine', 'list'), new RegExp(`waits for an answer \\(permission\\): .*ctl routine respond ${made.routine_id} OPTION`));
  const answered = JSON.parse(ctl('--json', 'routine', 'respond', made.routine_id, 'allow_once'));
  assert.equal(answered.run_id, run.started);
  assert.equal(await routine(c, made.routine_id), undefined, 'the host does not see a routine made at the shell');
  while (!['done', 'failed'].includes(listed().find((r) => r.routine_id === made.routine_id).runs[0].status)) {
    if (Date.now() > deadline) throw new Error('the ctl routine\'s run never ended');
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(listed().find((r) => r.routine_id === made.routine_id).runs[0].status, 'done');
  ctl('routine', 'delete', made.routine_id);
  ctl('routine', 'delete', hosts.routine_id);
  assert.deepEqual(listed(), []);
});
