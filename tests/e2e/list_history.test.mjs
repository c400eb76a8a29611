// The default list after a day's history: 125 finished sessions whose results were collected and a
// few live ones. reasonix_list answers what an orchestrator acts on (the live ones, the
// uncollected one) in at most 4 KB as the host gets it, and counts the rest; all=true pages through
// every row. The agents are the fake ACP agent (tests/fake_agent), for scale.
// needs: python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, rawServer, BIN, REPO } from './helpers.mjs';

const FINISHED = 125;
const BUDGET = 4096; // bytes of the default list's result, as the tools/call answer carries it

const fx = useFixture({});

// A wrapper that runs the fake agent on our own binary, as the agent binary.
function fakeAgent(sb) {
  const path = join(sb.bin, 'reasonix');
  writeFileSync(path, `#!/bin/sh\nexec '${BIN}' script '${join(REPO, 'tests', 'fake_agent', 'fake_acp.lua')}' "$@"\n`, { mode: 0o755 });
  return path;
}

// Calls tool name on srv; returns {data (structuredContent), bytes (of the result as written)}.
async function call(srv, name, args = {}) {
  const frame = await srv.request('tools/call', { name, arguments: args });
  assert.ok(frame.result && !frame.result.isError, `${name}: ${JSON.stringify(frame.error ?? frame.result?.content)}`);
  const line = srv.lines[srv.frames.indexOf(frame)];
  const result = line.slice(line.indexOf('"result":') + '"result":'.length, line.lastIndexOf('}'));
  return { data: frame.result.structuredContent, bytes: Buffer.byteLength(result) };
}

// Spawns tasks (many per call) and watches until each finished its turn; returns the ids.
async function spawnIdle(srv, tasks) {
  const ids = [];
  for (let i = 0; i < tasks.length; i += 64) {
    const agents = tasks.slice(i, i + 64).map((task) => ({ task }));
    const { data } = await call(srv, 'reasonix_spawn', { agents, parallelism: 16 });
    assert.equal(data.failed, 0, JSON.stringify(data.results.filter((r) => r.error)));
    ids.push(...data.session_ids);
  }
  let left = [...ids];
  while (left.length) {
    const { data } = await call(srv, 'reasonix_watch', { session_ids: left });
    left = left.filter((id) => data.results[id]?.status !== 'idle');
  }
  return ids;
}

test('the default list after 125 finished sessions is the work at hand, in 4 KB; all=true has every row', async () => {
  const env = fx.env({ REASONIX_BIN: fakeAgent(fx.sb), REASONIX_MCP_DEFAULT_MODEL: 'fake/fake-model', REASONIX_MCP_RETAIN_MAX: '1000' });
  const srv = rawServer(fx.sb, { env });
  try {
    await srv.initialize();
    const task = (i) => `Task ${i}: review the module, fix what its tests find, and report the files you changed in one paragraph.`;
    const finished = await spawnIdle(srv, Array.from({ length: FINISHED }, (_, i) => task(i)));
    for (const id of finished) await call(srv, 'reasonix_stop', { session_id: id });
    await call(srv, 'reasonix_watch', { session_ids: finished }); // their exits, collected
    const live = await spawnIdle(srv, [task('live 1'), task('live 2')]);
    // one more whose turn ended and was not collected yet
    const { data: spawned } = await call(srv, 'reasonix_spawn', { task: task('unseen') });
    const unseen = spawned.session_id;
    let list;
    for (let i = 0; i < 200; i++) {
      list = await call(srv, 'reasonix_list', {});
      if (list.data.sessions.find((r) => r.session_id === unseen)?.status === 'idle') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const { data, bytes } = list;
    console.log(`default list: ${bytes} bytes, ${data.sessions.length} rows, counts ${JSON.stringify(data.counts)}, hidden ${data.hidden}`);
    assert.ok(bytes <= BUDGET, `the default list is ${bytes} bytes; the budget is ${BUDGET}`);
    assert.deepEqual(data.sessions.map((r) => r.session_id).sort(), [...live, unseen].sort(), 'the live and the uncollected ones');
    assert.equal(data.sessions.find((r) => r.session_id === unseen).terminal_pending, true);
    assert.deepEqual(data.counts, { exited: FINISHED, idle: 3 }, 'counts cover every session');
    assert.equal(data.hidden, FINISHED);

    const seen = new Set();
    let cursor;
    let pages = 0;
    do {
      const { data: page } = await call(srv, 'reasonix_list', { all: true, ...(cursor ? { cursor } : {}) });
      for (const r of page.sessions) seen.add(r.session_id);
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor);
    assert.equal(seen.size, FINISHED + 3, 'all=true pages through every row');
    assert.ok(pages >= 3, `50 rows a page: ${pages} pages`);
    for (const id of [...finished, ...live, unseen]) assert.ok(seen.has(id), `${id} listed`);
  } finally {
    await srv.close();
  }
});
