// A git worktree per agent (isolate: "worktree") with the real agent and a real repository made by
// the test: three agents spawned on one repository write the same file (notes.txt) differently at
// the same time — none waits for another's workspace lease, each diff shows only its own change, the main
// tree is untouched; the changes summary rides the watch result; stop and resume go on in the same
// worktree; removal keeps a branch with commits (and refuses a live agent); a spawn outside a
// repository is refused with nothing made; kill -9 of agentd while a worktree is being made leaves
// no worktree, lock or branch. Prints the three-agent wall time against the same jobs in one cwd.
// needs: agent python3 clients git
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, callTool, until, shutdownAgentd, agentdPid, alive, seamsEnv } from './helpers.mjs';

const SLEEP = 1.5; // each agent's tool runs this long: three at once overlap unless a lease serialises them
const SPANS = '/tmp/rxwt-spans-' + process.pid; // when each agent's tool ran (outside every worktree)
// the isolated jobs wait (at most 30 s) until all three have started, so a slow start of one agent
// cannot end another's job first; a lease that held one back would make the first end alone
const GATE = `for i in $(seq 300); do [ -e ${SPANS}/A.start ] && [ -e ${SPANS}/B.start ] && [ -e ${SPANS}/C.start ] && break; sleep 0.1; done; `;
// a bash tool that notes when it ran, sleeps, and (write) writes notes.txt with the agent's line
const job = (tag, write) => ({ name: 'bash', arguments: { command: `date +%s.%N > ${SPANS}/${tag}.start; `
  + (write ? GATE : '') + `sleep ${SLEEP}; `
  + (write ? `printf 'agent ${tag}\\n' > notes.txt; ` : '') + `date +%s.%N > ${SPANS}/${tag}.end` } });
after(() => rmSync(SPANS, { recursive: true, force: true }));
const scenario = {
  rules: [
    ...['A', 'B', 'C'].map((x) => ({ name: `write-${x}`, last_role: 'user', user_contains: `WT-${x} `, tool_calls: [job(x, true)] })),
    ...['A', 'B', 'C'].map((x) => ({ name: `shared-${x}`, last_role: 'user', user_contains: `WT-SHARED-${x} `, tool_calls: [job('shared-' + x, false)] })),
    { name: 'commit', last_role: 'user', user_contains: 'WT-COMMIT', tool_calls: [{ name: 'bash', arguments: {
      command: 'printf "kept\\n" > kept.txt && git add -A && git -c user.email=a@e -c user.name=agent commit -qm "agent work" && echo committed' } }] },
    { name: 'after-bash', last_tool_name: 'bash', text: 'bash: ', echo: 'tool_result' },
    { name: 'slow', last_role: 'user', user_contains: 'WT-SLOW', text: 'slow done' },
    { name: 'where', last_role: 'user', user_contains: 'WT-WHERE', tool_calls: [{ name: 'bash', arguments: { command: 'pwd; cat notes.txt' } }] },
  ],
  default: { text: 'ok' },
};
const fx = useFixture({ scenario }, (f) => {
  mkdirSync(SPANS, { recursive: true });
  const git = (...a) => execFileSync('git', ['-C', f.sb.ws, ...a], { encoding: 'utf8' });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(f.sb.ws, 'shared.txt'), 'base\n');
  git('add', '-A');
  git('-c', 'user.email=t@e', '-c', 'user.name=t', 'commit', '-qm', 'base');
  f.git = git;
});
let client;
const ids = {};

// Watches every id until each reported its turn's end; returns the results by id.
async function watchAll(ids) {
  const left = new Set(ids), got = {};
  while (left.size) {
    const w = await tool(client, 'reasonix_watch', { session_ids: [...left] });
    for (const [id, r] of Object.entries(w.results)) { if (r.status !== 'running' && r.status !== 'starting') { got[id] = r; left.delete(id); } }
  }
  return got;
}

test('three agents on one repository at once: no queueing, each diff its own change, the main tree untouched', async () => {
  ({ client } = await fx.connect({ name: 'wt-host', env: fx.env() }));
  const file = join(fx.sb.root, 'fleet.json');
  writeFileSync(file, JSON.stringify({ defaults: { isolate: 'worktree', keep_alive: true }, agents: { a: 'WT-A write', b: 'WT-B write', c: 'WT-C write' } }));
  const t0 = Date.now();
  const fleet = await tool(client, 'reasonix_spawn_fleet', { path: file });
  assert.equal(fleet.spawned, 3, `every agent spawned: ${JSON.stringify(fleet.results)}`);
  assert.equal(fleet.shared_workspaces, undefined, 'isolated agents share no workspace');
  const results = await watchAll(fleet.session_ids);
  const isolatedMs = Date.now() - t0;
  const span = (tag) => ['start', 'end'].map((e) => Number(readFileSync(join(SPANS, `${tag}.${e}`), 'utf8')));
  const spans = ['A', 'B', 'C'].map(span);
  assert.ok(Math.max(...spans.map((x) => x[0])) < Math.min(...spans.map((x) => x[1])), `the three tools ran at the same time: ${JSON.stringify(spans)}`);
  for (const [name, id] of fleet.results.map((r) => [r.name, r.session_id])) {
    ids[name] = id;
    assert.deepEqual(results[id].changes, { files: 0, insertions: 0, deletions: 0, commits: 0, untracked: 1 }, `${name}: changes in the watch result`);
    const d = await tool(client, 'reasonix_diff', { session_id: id, stat: false });
    assert.match(d.diff, new RegExp(`\\+agent ${name.toUpperCase()}`), `${name}'s diff has its change`);
    for (const other of ['A', 'B', 'C'].filter((x) => x !== name.toUpperCase())) assert.ok(!d.diff.includes(`agent ${other}`), `${name}'s diff has no other agent's`);
    assert.match(d.branch, new RegExp(`^reasonix/${id}$`));
  }
  assert.equal(readFileSync(join(fx.sb.ws, 'shared.txt'), 'utf8'), 'base\n', 'the main tree is untouched');
  assert.ok(!existsSync(join(fx.sb.ws, 'notes.txt')), 'no agent wrote into the main tree');
  assert.equal(fx.git('worktree', 'list').trim().split('\n').length, 4);

  // the same three jobs in one cwd, for the note: a workspace lease lets one run at a time
  writeFileSync(file, JSON.stringify({ agents: { a: 'WT-SHARED-A x', b: 'WT-SHARED-B x', c: 'WT-SHARED-C x' } }));
  const t1 = Date.now();
  const shared = await tool(client, 'reasonix_spawn_fleet', { path: file });
  assert.ok(shared.shared_workspaces, 'one cwd is reported shared');
  await watchAll(shared.session_ids);
  const sharedSpans = ['A', 'B', 'C'].map((x) => span('shared-' + x));
  console.log(`# three agents, a ${SLEEP} s job each: in their own worktrees ${isolatedMs} ms (jobs overlapping); in one cwd ${Date.now() - t1} ms `
    + `(jobs ${Math.max(...sharedSpans.map((x) => x[0])) < Math.min(...sharedSpans.map((x) => x[1])) ? 'overlapping' : 'one after another'})`);
  for (const id of shared.session_ids) await tool(client, 'reasonix_stop', { session_id: id });
});

test('stop and resume go on in the same worktree; removal keeps a branch with commits and refuses a live agent', async () => {
  const a = ids.a;
  const before = (await tool(client, 'reasonix_worktree', { session_id: a, action: 'info' })).path;
  await tool(client, 'reasonix_stop', { session_id: a });
  const r = await tool(client, 'reasonix_resume', { session_id: a });
  assert.equal(r.status, 'idle');
  await tool(client, 'reasonix_send', { session_id: a, message: 'WT-WHERE are you' });
  const w = await watchAll([a]);
  assert.ok(w[a].message.includes(before), `the resumed agent runs in its worktree: ${w[a].message}`);
  assert.match(w[a].message, /agent A/, 'with its own change');

  const live = await callTool(client, 'reasonix_worktree', { session_id: ids.b, action: 'remove' });
  assert.match(live.result.content[0].text, /stop it first/);
  await tool(client, 'reasonix_send', { session_id: ids.b, message: 'WT-COMMIT your work' });
  const c = await watchAll([ids.b]);
  assert.match(c[ids.b].message, /committed/);
  assert.equal(c[ids.b].changes.commits, 1);
  await tool(client, 'reasonix_stop', { session_id: ids.b });
  const gone = await tool(client, 'reasonix_worktree', { session_id: ids.b, action: 'remove' });
  assert.equal(gone.branch_kept, true);
  assert.match(gone.merge, new RegExp(`merge reasonix/${ids.b}$`));
  assert.ok(!existsSync(gone.removed));
  assert.match(fx.git('log', '--format=%s', `reasonix/${ids.b}`), /agent work/, 'the branch keeps the commit');
  await tool(client, 'reasonix_stop', { session_id: ids.c });
  const plain = await tool(client, 'reasonix_worktree', { session_id: ids.c, action: 'remove' });
  assert.equal(plain.branch_kept, false, 'no commits: the branch goes too');
  await tool(client, 'reasonix_stop', { session_id: a });
  await tool(client, 'reasonix_worktree', { session_id: a, action: 'remove' });
  const listed = await tool(client, 'reasonix_list', { all: true });
  assert.ok(listed.sessions.some((x) => x.session_id === a), 'a session whose worktree is gone stays listed');
});

test('refused outside a repository with nothing made; kill -9 of agentd mid-creation leaves no worktree, lock or branch', async () => {
  const outside = join(fx.sb.root, 'plain');
  mkdirSync(outside);
  const other = await fx.connect({ name: 'wt-plain', cwd: outside, env: fx.env() });
  const refused = await callTool(other.client, 'reasonix_spawn', { task: 'x', isolate: 'worktree' });
  assert.match(refused.result.content[0].text, /isolate=worktree: \S+ is not inside a git repository/);
  assert.deepEqual((await tool(other.client, 'reasonix_list', {})).sessions, [], 'no session left');
  await other.close();

  await client.close();
  await shutdownAgentd(fx.sb);
  ({ client } = await fx.connect({ name: 'wt-host', env: fx.env(seamsEnv({ fault: 'worktree_mid_create' })) }));
  const pid = agentdPid(fx.sb) ?? (await tool(client, 'reasonix_list', {}), agentdPid(fx.sb));
  const died = await callTool(client, 'reasonix_spawn', { task: 'WT-SLOW crash', isolate: 'worktree' });
  assert.equal(died.result.isError, true);
  await until(() => !alive(pid), 10000, 'agentd died making the worktree');
  const list = await tool(client, 'reasonix_list', { all: true }); // a fresh agentd cleans up first
  const crashed = list.sessions.find((s) => s.task && s.task.includes('WT-SLOW crash')) ?? list.sessions.find((s) => s.exit_reason === 'worktree_interrupted');
  assert.ok(crashed, JSON.stringify(list.sessions.map((s) => [s.session_id, s.status, s.exit_reason])));
  assert.equal(crashed.status, 'exited');
  // (the new agentd removes it in the background, the worktree first, then its branch)
  await until(() => fx.git('worktree', 'list').trim().split('\n').length === 1
    && fx.git('branch', '--list', `reasonix/${crashed.session_id}`) === '', 10000, 'only the main tree, and no branch');
  assert.deepEqual(existsSync(join(fx.sb.ws, '.git', 'worktrees')) ? readdirSync(join(fx.sb.ws, '.git', 'worktrees')) : [], [], 'no lock or admin dir');
});
