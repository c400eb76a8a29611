// The one surface (tools/init.lua), with the real agent: every name an earlier tool list had still
// answers with the result its new form gives, and `reasonix-mcp ctl` agrees with the MCP tools — the
// test walks the table `ctl --json help` prints, so a tool without a verb, a verb without a case here
// or a case whose two results differ fails it.
// needs: agent python3 clients git
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useFixture, tool, watchUntil, until, alive, BIN } from './helpers.mjs';

const ORCH = 'surface-orch';
const scenario = {
  rules: [
    { name: 'write', last_role: 'user', user_contains: 'WRITE-TASK', tool_calls: [{ name: 'write_file', arguments: { path: 'gated.txt', content: 'G\n' } }] },
    { name: 'after-write', last_tool_name: 'write_file', echo: 'tool_result', text: 'WROTE: ' },
    { name: 'change', last_role: 'user', user_contains: 'CHANGE-TASK', tool_calls: [{ name: 'write_file', arguments: { path: 'changed.txt', content: 'C\n' } }] },
    { name: 'after-change', last_tool_name: 'write_file', text: 'changed' },
  ],
  default: { text: 'ok' },
};

const fx = useFixture({ scenario }, (f) => {
  const git = (...a) => execFileSync('git', ['-C', f.sb.ws, ...a], { encoding: 'utf8' });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(f.sb.ws, 'README'), 'base\n');
  git('add', '-A');
  git('-c', 'user.email=t@e', '-c', 'user.name=t', 'commit', '-qm', 'base');
  const port = 23000 + (process.pid % 4000);
  f.envx = () => f.env({ REASONIX_MCP_ORCHESTRATOR_ID: ORCH, REASONIX_MCP_DASHBOARD_PORT: String(port) });
});

// Runs `reasonix-mcp ctl --orchestrator ORCH --json …`; returns the parsed result (or throws with stderr).
function ctlJson(...args) {
  const r = spawnSync(BIN, ['ctl', '--orchestrator', ORCH, '--json', ...args], { env: fx.envx(), cwd: fx.sb.ws, encoding: 'utf8', timeout: 120000 });
  if (r.status !== 0) throw new Error(`ctl ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// The keys of an object, sorted (the shape two results share when their values cannot agree).
const keys = (o) => Object.keys(o).sort();

// Shapes a value for comparison: objects by their keys, recursively one level into arrays and results.
function shape(v) {
  if (Array.isArray(v)) return v.map(shape);
  if (v && typeof v === 'object') return Object.fromEntries(keys(v).map((k) => [k, typeof v[k] === 'object' && v[k] !== null ? shape(v[k]) : typeof v[k]]));
  return typeof v;
}

const idle = (r) => r.status === 'idle' || r.status === 'exited';

test('every name an earlier tool list had answers with the result of its new form', async () => {
  const { client } = await fx.connect({ name: 'surface-renamed', env: fx.envx() });
  const table = ctlJson('help');
  const called = new Set();
  // Calls old name with args and the new form with newArgs; compares as compare says.
  const pair = async (old, args, newArgs, compare = 'shape') => {
    const entry = table.renamed.find((r) => r.name === old);
    assert.ok(entry, `${old} is in the table`);
    const a = await tool(client, old, args);
    const b = await tool(client, entry.to, { ...newArgs, ...(entry.set || {}) });
    if (compare === 'equal') assert.deepEqual(a, b, old);
    else assert.deepEqual(shape(a), shape(b), `${old} answers as ${entry.to} does`);
    called.add(old);
    return [a, b];
  };
  const fleet = join(fx.sb.root, 'fleet.json');
  writeFileSync(fleet, JSON.stringify({ name: 'pair', agents: [{ name: 'one', task: 'first' }] }));
  const [f1, f2] = await pair('reasonix_spawn_fleet', { path: fleet }, { fleet });
  const ids = [f1.session_ids[0], f2.session_ids[0]];
  await watchUntil(client, ids, idle);
  await pair('reasonix_broadcast', { session_ids: [ids[0]], message: 'again' }, { session_ids: [ids[1]], message: 'again' });
  await watchUntil(client, ids, idle);
  for (const id of ids) await tool(client, 'reasonix_stop', { session_id: id });
  await pair('reasonix_resume_fleet', { session_ids: [ids[0]] }, { session_ids: [ids[1]] });
  const { session_id: wt } = await tool(client, 'reasonix_spawn', { task: 'CHANGE-TASK edit', isolate: 'worktree' });
  await watchUntil(client, [wt], idle);
  const [d] = await pair('reasonix_diff', { session_id: wt }, { session_id: wt }, 'equal');
  assert.match(d.stat, /changed\.txt/);
  await pair('reasonix_routine_templates', {}, {}, 'equal');
  const [r1, r2] = await pair('reasonix_routine_create', { name: 'r1', prompt: 'say ok' }, { name: 'r2', prompt: 'say ok' });
  const [t1] = await pair('reasonix_routine_from_template', { template_id: 'flaky-tests', name: 't1', enabled: false },
    { template_id: 'flaky-tests', name: 't2', enabled: false });
  await pair('reasonix_routine_list', {}, {}, 'equal');
  await pair('reasonix_routine_configure', { routine_id: r1.routine_id, enabled: false }, { routine_id: r2.routine_id, enabled: false });
  await pair('reasonix_routine_stop', { routine_id: r1.routine_id }, { routine_id: r2.routine_id }); // no run at work
  await pair('reasonix_routine_run', { routine_id: r1.routine_id }, { routine_id: r2.routine_id });
  const ran = async (id) => (await tool(client, 'reasonix_routine', { action: 'list' })).routines.find((r) => r.routine_id === id).runs[0]?.status;
  for (const r of [r1, r2]) while (!['done', 'failed'].includes(await ran(r.routine_id))) await new Promise((res) => setTimeout(res, 50));
  await pair('reasonix_routine_delete', { routine_id: r1.routine_id }, { routine_id: r2.routine_id });
  await tool(client, 'reasonix_routine', { action: 'delete', routine_id: t1.routine_id });
  assert.deepEqual([...called].sort(), table.renamed.map((r) => r.name).sort(), 'each renamed name was called once');
  // tool sets, an opt-out now, still answer with the sets (everything listed)
  const sets = await tool(client, 'reasonix_toolsets', {});
  assert.ok(sets.toolsets.every((s) => s.listed), JSON.stringify(sets));
});

test('ctl and the MCP tools agree: each tool has its verb with the same arguments and result, or says why not', async () => {
  const { client } = await fx.connect({ name: 'surface-ctl', env: fx.envx() });
  const table = ctlJson('help');
  const listed = (await client.listTools()).tools.map((t) => t.name);
  assert.deepEqual(table.tools.filter((t) => !t.hidden).map((t) => t.tool), listed, 'the table is what tools/list lists');
  // Sessions to act on: one per path, so a consuming call through one path does not starve the other.
  const spawnPair = async (task, extra = {}) => {
    const a = await tool(client, 'reasonix_spawn', { task, ...extra });
    const b = ctlJson('spawn', task, ...Object.entries(extra).flatMap(([k, v]) => [`--${k.replace(/_/g, '-')}`, String(v)]));
    assert.deepEqual(shape(b), shape(a), 'spawn');
    return [a.session_id, b.session_id];
  };
  const cases = {
    spawn: async () => { await spawnPair('plain'); },
    watch: async () => {
      const [a, b] = await spawnPair('watched');
      const m = await tool(client, 'reasonix_watch', { session_ids: [a] });
      const c = ctlJson('watch', b);
      assert.deepEqual(keys(c), keys(m));
      assert.deepEqual(keys(c.results[b]), keys(m.results[a]));
      assert.equal(c.results[b].status, m.results[a].status);
    },
    respond: async () => {
      const [a, b] = await spawnPair('WRITE-TASK gated', { tool_approval: 'ask' });
      for (const id of [a, b]) {
        const w = await watchUntil(client, [id], (r) => !!r.permission_request);
        assert.ok(w[id].permission_request, JSON.stringify(w[id]));
      }
      const m = await tool(client, 'reasonix_respond_permission', { session_id: a, option_id: 'allow_once' });
      const c = ctlJson('respond', b, 'allow_once');
      assert.deepEqual(shape(c), shape(m));
      assert.equal(c.answered, true);
      await watchUntil(client, [a, b], idle);
    },
    send: async () => {
      const [a, b] = await spawnPair('to steer');
      await watchUntil(client, [a, b], idle);
      const m = await tool(client, 'reasonix_send', { session_id: a, message: 'next' });
      const c = ctlJson('send', b, 'next');
      assert.deepEqual({ ...c, session_id: 0 }, { ...m, session_id: 0 });
      await watchUntil(client, [a, b], idle);
    },
    poll: async () => {
      const [a, b] = await spawnPair('polled');
      await watchUntil(client, [a, b], idle);
      const m = await tool(client, 'reasonix_poll', { session_id: a, detail: true });
      const c = ctlJson('poll', b, '--detail');
      assert.deepEqual(keys(c), keys(m));
    },
    list: async () => {
      const m = await tool(client, 'reasonix_list', { all: true, limit: 500 });
      const c = ctlJson('list', '--all', '--limit', '500');
      assert.deepEqual(c.sessions.map((s) => s.session_id).sort(), m.sessions.map((s) => s.session_id).sort());
      assert.deepEqual(keys(c), keys(m));
    },
    stop: async () => {
      const [a, b] = await spawnPair('stopped');
      const m = await tool(client, 'reasonix_stop', { session_id: a });
      const c = ctlJson('stop', b);
      assert.deepEqual({ ...c, session_id: 0 }, { ...m, session_id: 0 });
    },
    resume: async () => {
      const [a, b] = await spawnPair('resumed');
      await watchUntil(client, [a, b], idle);
      for (const id of [a, b]) await tool(client, 'reasonix_stop', { session_id: id });
      const m = await tool(client, 'reasonix_resume', { session_id: a });
      const c = ctlJson('resume', b);
      assert.deepEqual(keys(c), keys(m));
    },
    configure: async () => {
      const [a, b] = await spawnPair('configured');
      await watchUntil(client, [a, b], idle);
      const m = await tool(client, 'reasonix_configure', { session_id: a, work_mode: 'economy' });
      const c = ctlJson('configure', b, '--work-mode', 'economy');
      assert.deepEqual(shape(c), shape(m));
      assert.equal(c.applies, m.applies);
    },
    transcript: async () => {
      const [a] = await spawnPair('read back');
      await watchUntil(client, [a], idle);
      assert.deepEqual(ctlJson('transcript', a), await tool(client, 'reasonix_transcript', { session_id: a }));
    },
    wait: async () => {
      const [a] = await spawnPair('waited');
      await watchUntil(client, [a], idle);
      const m = await tool(client, 'reasonix_wait', { session_ids: [a], timeout: 0 });
      assert.deepEqual(ctlJson('wait', a, '--timeout', '0'), m);
    },
    models: async () => { assert.deepEqual(ctlJson('models'), await tool(client, 'reasonix_models', {})); },
    worktree: async () => {
      const { session_id: wt } = await tool(client, 'reasonix_spawn', { task: 'CHANGE-TASK edit', isolate: 'worktree' });
      await watchUntil(client, [wt], idle);
      assert.deepEqual(ctlJson('worktree', wt, 'info'), await tool(client, 'reasonix_worktree', { session_id: wt, action: 'info' }));
      const diff = await tool(client, 'reasonix_worktree', { session_id: wt, action: 'diff', stat: false });
      assert.deepEqual(ctlJson('worktree', wt, 'diff', '--no-stat'), diff);
      assert.deepEqual(ctlJson('diff', wt, '--patch'), diff, 'the verb an earlier ctl had');
      assert.match(diff.diff, /changed\.txt/);
    },
    routine: async () => {
      assert.deepEqual(ctlJson('routine', 'templates'), await tool(client, 'reasonix_routine', { action: 'templates' }));
      const made = await tool(client, 'reasonix_routine', { action: 'create', name: 'mine', prompt: 'say ok', enabled: false });
      const shell = ctlJson('routine', 'create', 'shell-made', '--prompt', 'say ok', '--enabled', 'false');
      assert.deepEqual(shape(shell), shape(made));
      // the person at the shell sees every orchestrator's routines (the table says so); the host its own
      const all = ctlJson('routine', 'list').routines;
      const own = (await tool(client, 'reasonix_routine', { action: 'list' })).routines;
      assert.deepEqual(all.find((r) => r.routine_id === made.routine_id).name, own.find((r) => r.routine_id === made.routine_id).name);
      for (const r of [made, shell]) ctlJson('routine', 'delete', r.routine_id);
    },
    dashboard: async () => {
      const m = await tool(client, 'reasonix_dashboard', {});
      const c = ctlJson('dashboard');
      assert.deepEqual(keys(c).filter((k) => k !== 'started'), keys(m).filter((k) => k !== 'started'));
      assert.equal(c.url, m.url);
      assert.equal(c.pid, m.pid, 'the one dashboard, reused');
      process.kill(m.pid, 'SIGTERM'); // (it ends with the fleet too: dashboard.test.mjs)
      await until(() => !alive(m.pid), 10000, 'the dashboard stopped');
    },
    'restart-agentd': async () => {
      const m = await tool(client, 'reasonix_restart_agentd', { force: true });
      const c = ctlJson('restart-agentd', '--force');
      assert.deepEqual(keys(c), keys(m));
      assert.equal(c.restarted, true);
      assert.equal(c.old_pid, m.agentd_pid, 'ctl restarted the daemon the MCP call had started');
    },
  };
  const done = [];
  for (const entry of table.tools) {
    if (entry.none) {
      assert.ok(entry.none.length > 20, `${entry.tool} says why it has no verb`);
      const verb = entry.tool.replace(/^reasonix_/, '').replace(/_/g, '-');
      const r = spawnSync(BIN, ['ctl', verb], { env: fx.envx(), cwd: fx.sb.ws, encoding: 'utf8' });
      assert.equal(r.status, 2, `${entry.tool} has no verb: ${r.stderr}`);
      continue;
    }
    assert.ok(cases[entry.verb], `a case for verb ${entry.verb} (${entry.tool})`);
    await cases[entry.verb]();
    done.push(entry.verb);
  }
  assert.deepEqual(done.sort(), Object.keys(cases).sort(), 'every case belongs to a verb of the table');
});
