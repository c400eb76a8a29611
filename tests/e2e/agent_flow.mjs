// The flow every built-in agent's e2e test drives through agentd (spawn with tool_approval "ask" →
// watch → a second turn → a write asked and allowed → configure (model, effort, tool_approval yolo)
// and a write that asks nobody → a message queued during a slow turn → stop → resume with its
// history → no process left), and the timing of its first turn against the agent driven directly.
// The agent_<name>.test.mjs files give what differs: the scripted API and how to read its requests,
// env, the writes' targets, the texts, and checks of their own.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { tool, until, watchUntil, sandboxProcesses } from './helpers.mjs';

// Whether a watch result is a turn's end (not running, not waiting on an answer).
export const finished = (r) => r.status !== 'running' && r.status !== 'starting' && r.status !== 'awaiting_decision' && !r.permission_request;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Watches sid until pred(result) holds (a result not passing it must not be an exit).
async function watchFor(client, sid, pred, what) {
  for (;;) {
    const w = await tool(client, 'reasonix_watch', { session_ids: [sid] });
    const r = w.results[sid];
    if (r && pred(r)) return r;
    assert.notEqual(r?.status, 'exited', `${what}: ${JSON.stringify(r)}`);
  }
}

// Waits until no process of the agent is left in the sandbox.
export const agentGone = (fx, agent, what) =>
  until(() => sandboxProcesses(fx.sb).filter((p) => new RegExp(agent).test(p.cmd)).length === 0, 15000, what);

// Configures the idle session sid with c.set (model, effort, tool_approval yolo) as the agent takes
// them: c.applied is what was set, c.skipped the keys the agent lacks (each with why), c.agentConfig
// what the agent reports after; then sends c.say, a write: under yolo it lands without a permission
// request reaching the watch; c.reached() checks what the model API got (the new model, the new effort).
async function reconfigure(client, sid, c) {
  const r = await tool(client, 'reasonix_configure', { session_id: sid, ...c.set });
  assert.equal(r.applies, 'now', JSON.stringify(r));
  assert.deepEqual(r.applied, c.applied, JSON.stringify(r));
  assert.deepEqual(Object.keys(r.skipped ?? {}), c.skipped, JSON.stringify(r));
  for (const k of c.skipped) assert.match(r.skipped[k], new RegExp(`^${k} ${c.set[k]} not applied: `), JSON.stringify(r));
  for (const [k, v] of Object.entries(c.agentConfig)) assert.equal(r.agent_config[k], v, `agent_config.${k}: ${JSON.stringify(r)}`);
  await tool(client, 'reasonix_send', { session_id: sid, message: c.say });
  const w = await watchFor(client, sid, (x) => x.permission_request || (finished(x) && c.answer.test(x.message ?? '')), 'the write after configure');
  assert.ok(!w.permission_request, `after tool_approval yolo the write asks nobody: ${JSON.stringify(w)}`);
  assert.equal(readFileSync(c.target, 'utf8'), c.content, 'the write after configure landed');
  await c.reached();
}

// Asserts that sent (the text of the resumed turn's model request) carries every earlier turn of a
// flow whose messages and answers are the shared TURN-ONE … queued answer ones (gemini, opencode).
export function assertHistoryKept(sent) {
  for (const t of ['TURN-ONE go', 'first answer', 'TURN-TWO go', 'second answer', 'written', 'QUEUED-MSG', 'queued answer']) {
    assert.ok(sent.includes(t), `history kept across the resume: ${t}`);
  }
}

// Runs the flow through agentd and returns the ms from spawn to the first turn's end. o: agent, client
// (its MCP name), env, spawn (extra spawn args), say {one, two, write, slow, queued, resume} (the
// messages), answers {one, two, wrote, queued, resume} (regexes), target and content (the write),
// configure (reconfigure's c), once (read the first turns and the permission from one watch each, as
// final; else watch until each turn is idle with its answer and check every turn's end_turn),
// absentBeforeAnswer, and hooks:
// spawned(s), first(), asked(pr), wrote(), slowReached(), queued(), requestCount(), beforeResume(t1),
// history(n), where t1 is when the first turn ended (the agent's session was made before it) and n is
// requestCount() before the resumed turn's message.
export async function agentFlow(fx, o) {
  const { client } = await fx.connect({ name: o.client, env: o.env });
  const watch = async (sid) => (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  const turn = (sid, answer, what) => (o.once ? watch(sid) : watchFor(client, sid, (r) => r.status === 'idle' && answer.test(r.message ?? ''), what));
  const endTurn = (r) => { if (!o.once) assert.equal(r.stop_reason, 'end_turn'); };

  const t0 = Date.now();
  const s = await tool(client, 'reasonix_spawn', { task: o.say.one, agent: o.agent, tool_approval: 'ask', ...o.spawn });
  const sid = s.session_id;
  assert.equal(s.tool_approval, 'ask', JSON.stringify(s));
  o.spawned?.(s);
  const one = o.once ? await watch(sid) : await watchFor(client, sid, (r) => r.status === 'idle', 'first turn');
  const t1 = Date.now();
  const agentdMs = t1 - t0;
  assert.equal(one.status, 'idle', JSON.stringify(one));
  assert.match(one.message, o.answers.one);
  endTurn(one);
  o.first?.();

  await tool(client, 'reasonix_send', { session_id: sid, message: o.say.two });
  const two = await turn(sid, o.answers.two, 'second turn');
  assert.match(two.message, o.answers.two);
  endTurn(two);

  // ask: the write asks, the watch wakes with the request, the allow option lets it land in the cwd
  await tool(client, 'reasonix_send', { session_id: sid, message: o.say.write });
  const w = o.once ? await watch(sid) : await watchFor(client, sid, (r) => r.permission_request, 'the write asks');
  const pr = w.permission_request;
  assert.ok(pr, `the watch wakes with the permission request: ${JSON.stringify(w)}`);
  if (o.once) assert.equal(pr.kind, 'permission');
  o.asked?.(pr);
  if (o.absentBeforeAnswer) assert.ok(!existsSync(o.target), 'nothing written before the answer');
  const allow = pr.options.find((x) => x.kind === 'allow_once');
  assert.ok(allow, `an allow option: ${JSON.stringify(pr.options)}`);
  const answered = await tool(client, 'reasonix_respond_permission', { session_id: sid, option_id: allow.option_id ?? allow.optionId, request_id: pr.request_id });
  if (o.once) assert.equal(answered.answered, true);
  const wrote = o.once ? (await watchUntil(client, [sid], finished))[sid] : await turn(sid, o.answers.wrote, 'the turn after the write');
  assert.match(wrote.message, o.answers.wrote);
  endTurn(wrote);
  assert.equal(readFileSync(o.target, 'utf8'), o.content, 'the write landed in the session\'s cwd');
  o.wrote?.();
  await reconfigure(client, sid, o.configure);

  // steer = "queue": a message during a slow turn waits for its end, then starts the next turn
  await tool(client, 'reasonix_send', { session_id: sid, message: o.say.slow });
  await o.slowReached();
  const q = await tool(client, 'reasonix_send', { session_id: sid, message: o.say.queued });
  assert.equal(q.delivered, 'queued', JSON.stringify(q));
  const done = o.once ? (r) => finished(r) && o.answers.queued.test(r.message ?? '') : (r) => r.status === 'idle' && o.answers.queued.test(r.message ?? '');
  const queued = o.once ? (await watchUntil(client, [sid], done))[sid] : await watchFor(client, sid, done, 'the queued turn');
  assert.equal(queued.stop_reason, 'end_turn');
  await o.queued?.();

  await tool(client, 'reasonix_stop', { session_id: sid });
  await agentGone(fx, o.agent, `${o.agent} gone after stop`);
  await o.beforeResume?.(t1);
  await tool(client, 'reasonix_resume', { session_id: sid });
  const n = await o.requestCount?.();
  await tool(client, 'reasonix_send', { session_id: sid, message: o.say.resume });
  const backDone = o.once ? (r) => finished(r) && o.answers.resume.test(r.message ?? '') : (r) => r.status === 'idle' && o.answers.resume.test(r.message ?? '');
  const back = o.once ? (await watchUntil(client, [sid], backDone))[sid] : await watchFor(client, sid, backDone, 'the turn after resume');
  assert.equal(back.stop_reason, 'end_turn');
  await o.history(n);

  await tool(client, 'reasonix_stop', { session_id: sid });
  await agentGone(fx, o.agent, `no ${o.agent} process left after stop`);
  return agentdMs;
}

// Drives the agent directly: start() → initialize → session/new in cwd → the first prompt; returns the
// ms that took (close not counted) and the prompt's stop reason.
export async function directFirstTurn({ start, cwd, init, close = (a) => a.close() }) {
  const t0 = Date.now();
  const a = start();
  try {
    await a.request('initialize', init);
    const { sessionId } = await a.request('session/new', { cwd, mcpServers: [] });
    const r = await a.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-ONE go' }] });
    return { ms: Date.now() - t0, stopReason: r.stopReason };
  } finally {
    await close(a);
  }
}

// Prints spawn → first turn end through agentd (ms of each run) against the agent driven directly,
// their medians and ratio, as the one line bench/agents.lua reads.
function reportFirstTurn(agent, viaAgentd, direct) {
  const [a, b] = [median(viaAgentd), median(direct)];
  console.log(`# ${agent} spawn -> first turn end: through agentd ${viaAgentd.join(', ')} ms (median ${a}), directly ${direct.join(', ')} ms (median ${b}), ratio ${(a / b).toFixed(2)}`);
}

// Prints spawn → first turn end through agentd against the agent driven directly, medians of 3 (the
// direct runs share one home, warmed by a first run not counted). o: agent, client, env, answer, and
// home() → {cwd, start(), remove()} with init and close for directFirstTurn.
export async function compareFirstTurn(fx, o) {
  const { client } = await fx.connect({ name: o.client, env: o.env });
  const viaAgentd = [];
  for (let i = 0; i < 3; i++) {
    const t0 = Date.now();
    const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'TURN-ONE go', agent: o.agent, cwd: fx.sb.ws });
    const r = (await watchUntil(client, [sid], finished))[sid];
    viaAgentd.push(Date.now() - t0);
    assert.match(r.message, o.answer);
    await tool(client, 'reasonix_stop', { session_id: sid });
  }
  const direct = [];
  const h = o.home();
  try {
    for (let i = 0; i < 4; i++) {
      const { ms } = await directFirstTurn({ start: h.start, cwd: h.cwd, init: o.init, close: o.close });
      if (i > 0) direct.push(ms);
    }
  } finally {
    h.remove();
  }
  reportFirstTurn(o.agent, viaAgentd, direct);
  await agentGone(fx, o.agent, 'no process of the agent left');
}
