// Decisions (the spec's selftest_permission.py, selftest_question.py, selftest_elicitation.py):
// ask-mode permission round trip; an agent question answered through MCP elicitation, through
// reasonix_respond_permission when the client has no elicitation, and left pending on decline.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, watchUntil } from './helpers.mjs';

const question = {
  header: 'Library', question: 'Which library?', multiSelect: false,
  options: [{ label: 'requests', description: 'popular' }, { label: 'httpx', description: '' }],
};
const scenario = {
  rules: [
    { name: 'write', last_role: 'user', user_contains: 'WRITE-TASK', tool_calls: [{ name: 'write_file', arguments: { path: 'perm.txt', content: 'PERM\n' } }] },
    { name: 'reject-write', last_role: 'user', user_contains: 'REJECT-TASK', tool_calls: [{ name: 'write_file', arguments: { path: 'rejected.txt', content: 'NO\n' } }] },
    { name: 'after-write', last_tool_name: 'write_file', echo: 'tool_result', text: 'WRITE RESULT: ' },
    { name: 'ask', last_role: 'user', user_contains: 'ASK-TASK', tool_calls: [{ name: 'ask', arguments: { questions: [question] } }] },
    { name: 'after-ask', last_tool_name: 'ask', echo: 'tool_result', text: 'ANSWER: ' },
  ],
};

const fx = useFixture({ scenario });

const finished = (r) => r.status !== 'running' && r.status !== 'starting' && r.status !== 'awaiting_decision' && !r.permission_request;

test('ask mode: a gated write surfaces in watch, is approved with respond_permission and runs', async () => {
  const { client } = await fx.connect({ name: 'perm-no-elicitation' });
  const { session_id: sid, tool_approval } = await tool(client, 'reasonix_spawn', { task: 'WRITE-TASK create perm.txt', tool_approval: 'ask' });
  assert.equal(tool_approval, 'ask');
  const { results } = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  const pr = results[sid].permission_request;
  assert.ok(pr, `watch returns the decision: ${JSON.stringify(results[sid])}`);
  assert.equal(pr.kind, 'permission');
  assert.match(pr.tool_call.title, /write_file/);
  assert.equal(pr.tool_call.rawInput.path, 'perm.txt', 'the arguments are there to judge');
  const ids = pr.options.map((o) => o.optionId);
  assert.ok(ids.includes('allow_once') && ids.includes('reject_once'), ids.join());
  const answered = await tool(client, 'reasonix_respond_permission', { session_id: sid, option_id: 'allow_once', request_id: pr.request_id });
  assert.equal(answered.answered, true);
  const done = await watchUntil(client, [sid], finished);
  assert.equal(done[sid].stop_reason, 'end_turn');
  assert.equal(readFileSync(join(fx.sb.ws, 'perm.txt'), 'utf8'), 'PERM\n');

  // Rejected: the tool does not run and the agent is told so.
  const { session_id: rej } = await tool(client, 'reasonix_spawn', { task: 'REJECT-TASK create rejected.txt', tool_approval: 'ask' });
  const w = await tool(client, 'reasonix_watch', { session_ids: [rej] });
  await tool(client, 'reasonix_respond_permission', { session_id: rej, option_id: 'reject_once' });
  const end = await watchUntil(client, [rej], finished);
  assert.match(end[rej].message, /declined|blocked/i);
  assert.equal(existsSync(join(fx.sb.ws, 'rejected.txt')), false);
  assert.ok(w.results[rej].permission_request);
});

test('a permission request becomes an elicitation form; accepting it approves the tool', async () => {
  const forms = [];
  const { client } = await fx.connect({
    name: 'perm-elicitation',
    elicit: async (req) => { forms.push(req.params); return { action: 'accept', content: { option: 'allow_once' } }; },
  });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'WRITE-TASK via form', tool_approval: 'ask', cwd: '.' });
  const done = await watchUntil(client, [sid], finished);
  assert.equal(done[sid].stop_reason, 'end_turn');
  assert.equal(forms.length, 1, 'one form per decision');
  assert.equal(forms[0].mode, 'form');
  assert.match(forms[0].message, /permission.*write_file/);
  const field = forms[0].requestedSchema.properties.option;
  assert.deepEqual(forms[0].requestedSchema.required, ['option']);
  assert.ok(field.oneOf.some((o) => o.const === 'allow_once' && o.title === 'Allow'), JSON.stringify(field));
});

test('an agent question answered through the elicitation form reaches the agent', async () => {
  const forms = [];
  const { client, stderr } = await fx.connect({
    name: 'question-elicitation',
    elicit: async (req) => { forms.push(req.params); return { action: 'accept', content: { option: 'q1:2' } }; },
  });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'ASK-TASK pick a library' });
  const done = await watchUntil(client, [sid], finished);
  assert.match(done[sid].message, /httpx/, 'the chosen label became the ask result');
  assert.equal(forms.length, 1);
  assert.match(forms[0].message, /asks: Which library\?/);
  const opts = forms[0].requestedSchema.properties.option.oneOf;
  assert.deepEqual(opts.map((o) => o.const), ['q1:1', 'q1:2', 'q1:cancel']);
  assert.equal(opts[0].title, 'requests - popular');
  assert.match(stderr.join(''), /elicitation: session \S+ request \S+ answered q1:2/);
});

test('without elicitation the question waits in watch and respond_permission answers it', async () => {
  const { client } = await fx.connect({ name: 'question-plain' });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'ASK-TASK pick a library' });
  const { results } = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  const pr = results[sid].permission_request;
  assert.equal(pr.kind, 'question');
  assert.equal(pr.tool_call.kind, 'other');
  assert.equal(pr.tool_call.rawInput.question, 'Which library?');
  assert.deepEqual(pr.options.map((o) => o.optionId), ['q1:1', 'q1:2', 'q1:cancel']);
  const polled = await tool(client, 'reasonix_poll', { session_id: sid });
  assert.equal(polled.permission_request?.request_id, pr.request_id, 'poll shows the pending question too');
  await tool(client, 'reasonix_respond_permission', { session_id: sid, option_id: 'q1:1' });
  const done = await watchUntil(client, [sid], finished);
  assert.match(done[sid].message, /requests/);
});

test('a declined form leaves the question pending for watch and respond_permission', async () => {
  let declined = 0;
  const { client, stderr } = await fx.connect({
    name: 'question-decline',
    elicit: async () => { declined += 1; return { action: 'decline' }; },
  });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'ASK-TASK pick a library' });
  const { results } = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  assert.equal(results[sid].permission_request?.kind, 'question', 'still pending after the form');
  const listed = await tool(client, 'reasonix_list', { pending_only: true });
  assert.ok(listed.sessions.find((s) => s.session_id === sid)?.pending_decision);
  await tool(client, 'reasonix_respond_permission', { session_id: sid, option_id: 'q1:2' });
  const done = await watchUntil(client, [sid], finished);
  assert.match(done[sid].message, /httpx/);
  assert.equal(declined, 1);
  assert.match(stderr.join(''), /client answered decline .*left pending/);
});
