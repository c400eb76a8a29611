// A pending decision wakes every watch until it is answered (issue #13, item 2): after a wrong
// answer (an option id the request does not have) the next watch returns the same decision at once,
// marked as a repeat, instead of blocking while the agent waits on the orchestrator.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, tool, callTool, withTimeout } from './helpers.mjs';

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

test('a wrong answer leaves the decision pending and every next watch returns it at once', async () => {
  const { client } = await fx.connect({ name: 'repeat-decision' });
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'ASK-TASK pick a library' });
  const first = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  assert.equal(first.permission_request?.kind, 'question', JSON.stringify(first));
  assert.equal(first.decision_repeated, undefined, 'the first report is not a repeat');

  const wrong = await callTool(client, 'reasonix_respond_permission', { session_id: sid, option_id: 'beta' });
  assert.equal(wrong.result.isError, true, 'a label is not an option id');
  assert.match(wrong.result.content[0].text, /q1:2/, 'the error lists the option ids');

  for (let i = 0; i < 2; i++) {
    const again = await withTimeout(tool(client, 'reasonix_watch', { session_ids: [sid], timeout: 30 }), 10000, `watch ${i + 2} returns at once`);
    assert.equal(again.timed_out, undefined);
    assert.equal(again.results[sid].permission_request?.request_id, first.permission_request.request_id);
    assert.equal(again.results[sid].decision_repeated, true);
  }

  await tool(client, 'reasonix_respond_permission', { session_id: sid, option_id: 'q1:2' });
  let end;
  do end = (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];
  while (end.status === 'running' || end.permission_request);
  assert.equal(end.stop_reason, 'end_turn');
  assert.match(end.message, /ANSWER: .*beta/s);
});
