// A pending decision wakes a watch once, not every watch: a host that keeps reasonix_watch in flight
// while a person answers must not spin on it (issue 34: 7,468 watch results in 3 s, each a model turn
// and an invitation to answer for the person). It comes back at once after a wrong answer, to a host
// connection that has not seen it, and as a reminder after REASONIX_MCP_DECISION_REMIND_S; while the
// host shows the person a form for it (elicitation), the result says so, and a dismissed form makes
// it the orchestrator's again.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, tool, callTool, withTimeout } from './helpers.mjs';

const REMIND_S = 4;
const question = {
  header: 'Library', question: 'Which library?', multiSelect: false,
  options: [{ label: 'alpha', description: 'first' }, { label: 'beta', description: 'second' }],
};
const scenario = {
  rules: [
    { name: 'ask', last_role: 'user', user_contains: 'ASK-TASK', tool_calls: [{ name: 'ask', arguments: { questions: [question] } }] },
    { name: 'after-ask', last_tool_name: 'ask', echo: 'tool_result', text: 'ANSWER: ' },
  ],
};

const fx = useFixture({ scenario });
const env = () => fx.env({ REASONIX_MCP_DECISION_REMIND_S: String(REMIND_S) });

// Watches sid once with timeout s; resolves {result, ms}.
async function watchOnce(client, sid, timeout) {
  const t0 = Date.now();
  const result = await tool(client, 'reasonix_watch', { session_ids: [sid], timeout });
  return { result, ms: Date.now() - t0 };
}

// Answers sid's decision and watches until the turn ends; returns its last result.
async function finish(client, sid, option) {
  await tool(client, 'reasonix_respond_permission', { session_id: sid, option_id: option });
  let end;
  do end = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  while (end.status === 'running' || end.permission_request);
  return end;
}

test('a decision wakes a watch once: no spin; at once after a wrong answer, for a new connection, and as a reminder', async () => {
  const { client } = await fx.connect({ name: 'repeat-decision', env: env() });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'ASK-TASK pick a library' });
  const first = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  assert.equal(first.permission_request?.kind, 'question', JSON.stringify(first));
  assert.equal(first.decision_repeated, undefined, 'the first report is not a repeat');
  assert.equal(first.permission_request.asking, undefined, 'this host shows no form');

  // a host that keeps its watch in flight while a person decides: the watch blocks, it does not spin
  let results = 0;
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline) {
    const { result } = await watchOnce(client, sid, 1);
    if (result.results[sid]) results++;
  }
  assert.equal(results, 0, 'no watch in 3 s returned the decision it already reported');

  // a wrong answer: the next watch is told at once, the one after that blocks again
  const wrong = await callTool(client, 'reasonix_respond_permission', { session_id: sid, option_id: 'beta' });
  assert.equal(wrong.result.isError, true, 'a label is not an option id');
  assert.match(wrong.result.content[0].text, /q1:2/, 'the error lists the option ids');
  const again = await withTimeout(watchOnce(client, sid, 30), 10000, 'the watch after a wrong answer returns at once');
  assert.equal(again.result.results[sid].permission_request?.request_id, first.permission_request.request_id);
  assert.equal(again.result.results[sid].decision_repeated, true);
  assert.equal((await watchOnce(client, sid, 1)).result.timed_out, true, 'and once only');

  // a host connection that has not seen it gets it at once
  const other = await fx.connect({ name: 'repeat-decision', env: env() });
  const fresh = await withTimeout(watchOnce(other.client, sid, 30), 10000, 'a new connection sees the decision');
  assert.equal(fresh.result.results[sid].permission_request?.request_id, first.permission_request.request_id);
  await other.close();

  // the reminder: a watch kept waiting gets the decision again after REMIND_S, flagged
  const reminded = await watchOnce(client, sid, 30);
  assert.equal(reminded.result.results[sid].decision_reminder, true, JSON.stringify(reminded.result));
  assert.ok(reminded.ms >= (REMIND_S - 1) * 1000 && reminded.ms < (REMIND_S + 5) * 1000, `after about ${REMIND_S} s: ${reminded.ms} ms`);

  const end = await finish(client, sid, 'q1:2');
  assert.equal(end.stop_reason, 'end_turn');
  assert.match(end.message, /ANSWER: .*beta/s);
});

test('while the host shows the person a form, the result says so; a dismissed form is the orchestrator\'s again', async () => {
  let dismiss;
  const dismissed = new Promise((resolve) => { dismiss = resolve; });
  const forms = [];
  const { client } = await fx.connect({
    name: 'repeat-form', env: env(),
    // the person keeps the form open, then dismisses it
    elicit: async (req) => { forms.push(req.params); await dismissed; return { action: 'decline' }; },
  });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'ASK-TASK pick a library' });
  const first = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  assert.equal(first.permission_request?.asking, 'elicitation', `a person is being asked: ${JSON.stringify(first)}`);
  assert.equal((await watchOnce(client, sid, 2)).result.timed_out, true, 'the watch waits while the person decides');
  assert.equal(forms.length, 1, 'one form');
  const waiting = watchOnce(client, sid, 30);
  dismiss();
  const back = await withTimeout(waiting, 10000, 'a dismissed form wakes the watch');
  assert.equal(back.result.results[sid].decision_repeated, true);
  assert.equal(back.result.results[sid].permission_request.asking, undefined, 'nobody is asked now: it is yours');
  const end = await finish(client, sid, 'q1:1');
  assert.match(end.message, /ANSWER: .*alpha/s);
});
