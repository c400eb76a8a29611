// reasonix_list kept in agentd's answer lane (core/answerlane.c, agentd/answers.lua), against the real
// agent: a list asked again while nothing it shows changed is answered in C from the text agentd's
// Lua gave; after every change a list could show, it must say what a fresh list says. The fresh one
// is the same view asked with include_task:false (its params are not {}, so never the lane's).
// Changes: a spawn, a decision asked and answered, a turn's spend, a stop, a policy edit that
// shrinks the page.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, watchUntil, until } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'write', last_role: 'user', user_contains: 'WRITE-TASK', tool_calls: [{ name: 'write_file', arguments: { path: 'kept.txt', content: 'KEPT\n' } }] },
    { name: 'after-write', last_tool_name: 'write_file', echo: 'tool_result', text: 'WRITE RESULT: ' },
  ],
  default: { text: 'ok' },
};

const fx = useFixture({ scenario }, (f) => {
  mkdirSync(f.sb.mcp, { recursive: true, mode: 0o700 });
  f.policyDir = join(f.sb.mcp, 'policy');
  mkdirSync(f.policyDir, { mode: 0o700 });
});

const finished = (r) => r.status !== 'running' && r.status !== 'starting' && r.status !== 'awaiting_decision' && !r.permission_request;

// The list without what changes from call to call by itself: the health of an agent at work.
function steady(list) {
  return { ...list, sessions: list.sessions.map(({ health, ...row }) => row) };
}

// Asks the default list twice (the second is the lane's when the first kept it) and once fresh;
// all three must agree. Returns the fresh one.
async function sameAsFresh(client, what) {
  const first = steady(await tool(client, 'reasonix_list', {}));
  const again = steady(await tool(client, 'reasonix_list', {}));
  const fresh = steady(await tool(client, 'reasonix_list', { include_task: false }));
  assert.deepEqual(first, fresh, `${what}: the first list`);
  assert.deepEqual(again, fresh, `${what}: the list asked again`);
  return fresh;
}

const row = (list, id) => list.sessions.find((r) => r.session_id === id);

test('a list kept in agentd shows every change at once, and is given from the kept text while nothing changes', async () => {
  const { client } = await fx.connect({ name: 'answerlane' });
  const { session_id: a } = await tool(client, 'reasonix_spawn', { task: 'say hello' });
  await watchUntil(client, [a], finished);
  let list = await sameAsFresh(client, 'one idle session');
  assert.equal(row(list, a).status, 'idle');
  const spent = row(list, a).usage?.tokens ?? 0;
  assert.ok(spent > 0, `the turn's spend is listed: ${JSON.stringify(row(list, a))}`);
  for (let i = 0; i < 5; i++) await sameAsFresh(client, `nothing changed, round ${i}`);

  const { session_id: b } = await tool(client, 'reasonix_spawn', { task: 'WRITE-TASK create kept.txt', tool_approval: 'ask' });
  const asked = await tool(client, 'reasonix_watch', { session_ids: [b] });
  const pr = asked.results[b].permission_request;
  assert.ok(pr, `the decision: ${JSON.stringify(asked.results[b])}`);
  list = await sameAsFresh(client, 'a decision pending');
  assert.equal(row(list, b).pending_decision?.request_id, pr.request_id);

  await tool(client, 'reasonix_respond_permission', { session_id: b, option_id: 'allow_once', request_id: pr.request_id });
  await watchUntil(client, [b], finished);
  list = await sameAsFresh(client, 'the decision answered, the turn ended');
  assert.equal(row(list, b).status, 'idle');
  assert.equal(row(list, b).pending_decision, undefined);

  await tool(client, 'reasonix_send', { session_id: a, message: 'once more' });
  await watchUntil(client, [a], finished);
  list = await sameAsFresh(client, 'a second turn spent more');
  assert.ok(row(list, a).usage.tokens > spent, `${row(list, a).usage.tokens} > ${spent}`);

  const stopped = await tool(client, 'reasonix_stop', { session_id: a });
  assert.equal(stopped.status, 'exited', JSON.stringify(stopped));
  list = await sameAsFresh(client, 'stopped');
  assert.equal(row(list, a), undefined, 'a session stopped by its orchestrator is counted, not listed');
  assert.equal(list.hidden, 1);
  assert.equal(list.counts.exited, 1);

  // a policy edit is Lua's to see first: a page of at most 1,100 bytes cuts its one row
  assert.equal(list.result_truncated, undefined);
  const policy = join(fx.policyDir, '10-small-page.lua');
  writeFileSync(policy + '.tmp', 'return { caps = { max_result_bytes = 1100 } }\n');
  renameSync(policy + '.tmp', policy);
  list = await sameAsFresh(client, 'after a policy edit');
  assert.equal(list.result_truncated, true, JSON.stringify(list));

  await client.close();
  await until(() => /answer\(s\) given from kept ones/.test(readFileSync(join(fx.sb.mcp, 'agentd.log'), 'utf8')), 10000, 'the log line');
  const given = [...readFileSync(join(fx.sb.mcp, 'agentd.log'), 'utf8').matchAll(/conn \d+: (\d+) answer\(s\) given from kept ones/g)]
    .reduce((n, m) => n + Number(m[1]), 0);
  console.log(`lists given from kept answers: ${given}`);
  assert.ok(given >= 5, `the lane gave the lists asked again while nothing changed (${given})`);
});
