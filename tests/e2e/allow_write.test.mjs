// Cross-cwd writes (the spec's selftest_allow_write.py): an agent rooted in the project writes into
// a [sandbox] allow_write dir; the spawn posture lists that dir; a dir not listed stays closed.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, existsSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, watchUntil, writeConfig } from './helpers.mjs';

let shared;
let closed;
const fx = useFixture({}, async (fx) => {
  shared = join(fx.sb.root, 'shared');
  closed = join(fx.sb.root, 'closed');
  mkdirSync(shared);
  mkdirSync(closed);
  await fx.provider.setScenario({
    rules: [
      { name: 'cross', last_role: 'user', user_contains: 'CROSS-TASK', tool_calls: [{ name: 'write_file', arguments: { path: join(shared, 'cross.txt'), content: 'CROSS\n' } }] },
      { name: 'closed', last_role: 'user', user_contains: 'CLOSED-TASK', tool_calls: [{ name: 'write_file', arguments: { path: join(closed, 'nope.txt'), content: 'NO\n' } }] },
      { name: 'after', last_tool_name: 'write_file', echo: 'tool_result', text: 'RESULT: ' },
    ],
  });
  writeConfig(fx.sb, fx.provider.port, { extraToml: `[sandbox]\nallow_write = [${JSON.stringify(shared)}]` });
});

const finished = (r) => !r.permission_request && r.status !== 'running' && r.status !== 'starting';

test('an agent in the project writes into an allow_write dir; other dirs stay closed', async () => {
  const { client } = await fx.connect({ name: 'allow-write' });
  const ok = await tool(client, 'reasonix_spawn', { task: 'CROSS-TASK write the shared file', tool_approval: 'auto' });
  assert.ok(ok.posture.allow_write.includes(realpathSync(shared)), JSON.stringify(ok.posture));
  const r = (await watchUntil(client, [ok.session_id], finished))[ok.session_id];
  assert.equal(r.stop_reason, 'end_turn');
  assert.equal(readFileSync(join(shared, 'cross.txt'), 'utf8'), 'CROSS\n', `written: ${r.message}`);

  const no = await tool(client, 'reasonix_spawn', { task: 'CLOSED-TASK write elsewhere', tool_approval: 'auto' });
  const first = (await tool(client, 'reasonix_watch', { session_ids: [no.session_id] })).results[no.session_id];
  if (first.permission_request) {
    // Gated instead of refused: the orchestrator decides, and rejecting keeps the dir closed.
    const deny = first.permission_request.options.find((o) => /^reject/.test(o.kind ?? '') || /deny|reject/.test(o.optionId));
    assert.ok(deny, JSON.stringify(first.permission_request.options));
    await tool(client, 'reasonix_respond_permission', { session_id: no.session_id, option_id: deny.optionId });
    await watchUntil(client, [no.session_id], finished);
  }
  assert.equal(existsSync(join(closed, 'nope.txt')), false, `a dir outside cwd + allow_write stays closed: ${JSON.stringify(first)}`);
  await tool(client, 'reasonix_stop', { session_id: ok.session_id });
  await tool(client, 'reasonix_stop', { session_id: no.session_id });
});
