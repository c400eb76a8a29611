// A host that stops reading is bounded by bytes, not by count (issue 34): a host sends many
// reasonix_list(include_task=true) calls about a session whose task is 5 MB and never reads its
// stdout. Each process of the path (launcher, server, agentd) stops reading its peer once 1 MiB is
// queued for it or 64 of its requests are in flight (lua/rmcp/config.lua "Back-pressure"), so
// their memory stays under a stated bound and is the same for 200 calls as for 1000; once the host
// reads again, every call is answered exactly once. The agent is the fake ACP agent
// (tests/fake_agent), for scale.
// needs: clients
import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readFileSync, openSync, readSync, closeSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { makeSandbox, serverEnv, endSandbox, agentdPid, printAgentdLog, BIN, REPO, until, withTimeout } from './helpers.mjs';

// Each answer is ~1 MB (the task cut to fit a result of 500,000 bytes, twice in a CallToolResult):
// 200 of them piled up would be 200 MB, 1000 of them 1 GB.
const MAX_RESULT_BYTES = 500000;
const TASK_BYTES = 5 * 1024 * 1024;
// What a process may grow by while its host does not read: 1 MiB queued for the peer, the answer
// that crossed the mark, the pipes' and the socket's read-ahead, and garbage not yet collected.
const GROWTH_BOUND_KIB = 48 * 1024;
// How much more 1000 calls may cost than 200: memory does not grow with the number of calls.
const FLAT_SLACK_KIB = 16 * 1024;

const sb = makeSandbox();
afterEach((t) => { if (t.passed === false) printAgentdLog(sb); });
after(async () => {
  assert.deepEqual(await endSandbox(sb), [], 'no process of this test may be left');
});

// The fake agent behind the name `reasonix`, run by our own binary; it echoes a prompt in 1 MiB chunks.
const agent = join(sb.bin, 'reasonix');
writeFileSync(agent, `#!/bin/sh\nexec '${BIN}' script '${join(REPO, 'tests', 'fake_agent', 'fake_acp.lua')}' "$@"\n`, { mode: 0o755 });
const env = serverEnv(sb, { REASONIX_BIN: agent, FAKE_ACP_CHUNK: String(1024 * 1024), REASONIX_MCP_MAX_RESULT_BYTES: String(MAX_RESULT_BYTES) });

// A field of /proc/<pid>/status in KiB.
function statusKiB(pid, field) {
  return Number(new RegExp(`${field}:\\s*(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
}

// Resets the peak resident size of pid (VmHWM) to what it holds now.
function resetPeak(pid) {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

// Which readers each process has stopped reading, from its log lines (lib/flow.lua):
// "<name>: <why>; not reading until that clears" and "<name>: reading again".
class Gates {
  constructor() { this.held = new Map(); }
  feed(text) {
    for (const m of text.matchAll(/ (\w+)\[(\d+)\] (?:warn|info): ([\w ]+?): (?:.*(not reading) until that clears|reading again)$/gm)) {
      this.held.set(`${m[1]} ${m[3]}`, m[4] !== undefined);
    }
  }
  // True while a reader whose name matches re is held.
  holds(re) { return [...this.held].some(([name, on]) => on && re.test(name)); }
}

// The launcher under test, its stdout left unread until read() is called; its stderr (and its
// server's) feeds gates.
function startLauncher(gates) {
  const child = spawn(BIN, [], { env, cwd: sb.ws, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stderr.setEncoding('utf8');
  let partial = '';
  child.stderr.on('data', (d) => {
    const text = partial + d;
    partial = text.slice(text.lastIndexOf('\n') + 1);
    gates.feed(text.slice(0, text.length - partial.length));
  });
  const seen = new Map(); // id -> how many answers
  const frames = new Map(); // id -> the last answer
  const bad = []; // lines that are not JSON
  let buf = '';
  const onData = (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      let m;
      try { m = JSON.parse(line); } catch { bad.push(line.slice(0, 100) + ` … (${line.length} bytes)`); continue; }
      if (m.id === undefined) continue;
      seen.set(m.id, (seen.get(m.id) || 0) + 1);
      frames.set(m.id, m);
    }
  };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', onData);
  const ended = once(child.stdout, 'end');
  const exited = once(child, 'exit');
  const l = {
    child, seen, frames, bad,
    send: (msg) => child.stdin.write(JSON.stringify(msg) + '\n'),
    async request(id, method, params) {
      l.send({ jsonrpc: '2.0', id, method, params });
      await until(() => frames.has(id), 60000, `the answer to ${id}`);
      return frames.get(id);
    },
    stopReading() { child.stdout.off('data', onData); child.stdout.pause(); },
    read() { child.stdout.on('data', onData); child.stdout.resume(); },
    async close() {
      child.stdin.end();
      await withTimeout(Promise.all([ended, exited]), 20000, 'the launcher ends after stdin EOF');
    },
  };
  return l;
}

const LIST = { name: 'reasonix_list', arguments: { include_task: true } };

// One round: a fresh launcher sends n list calls without reading; returns what each process of the
// path grew by (KiB) before the host read again, after checking that every call is answered once.
// opts.paused(pids) runs once the path is full, before the host reads.
// A launcher left by a failed round is killed (its server follows: PDEATHSIG).
async function round(n, opts = {}) {
  const gates = new Gates();
  const l = startLauncher(gates);
  try {
    return await hog(l, gates, n, opts);
  } finally {
    if (l.child.exitCode === null && l.child.signalCode === null) l.child.kill('SIGKILL'); // (a failed round)
  }
}

// The round on launcher l: a warm call, then n calls unread, then reading them all.
async function hog(l, gates, n, { paused: whilePaused }) {
  await l.request('init', 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'hog', version: '1' } });
  l.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const one = await l.request('warm', 'tools/call', LIST);
  assert.ok(!one.result.isError, JSON.stringify(one).slice(0, 300));
  const size = JSON.stringify(one).length;
  assert.ok(size > MAX_RESULT_BYTES && size < 2.2 * MAX_RESULT_BYTES, `one answer is ${size} bytes`);
  const server = Number(readFileSync(`/proc/${l.child.pid}/task/${l.child.pid}/children`, 'utf8').trim().split(/\s+/)[0]);
  const pids = { launcher: l.child.pid, server, agentd: agentdPid(sb) };
  const base = {};
  for (const [name, pid] of Object.entries(pids)) { resetPeak(pid); base[name] = statusKiB(pid, 'VmRSS'); }

  l.stopReading();
  for (let id = 1; id <= n; id++) l.send({ jsonrpc: '2.0', id, method: 'tools/call', params: LIST });
  // the path is full: the launcher reads neither the host nor its server, the server not agentd,
  // agentd not the server (the server's stdin may stay open: the launcher sends it no more)
  const agentdLog = join(sb.mcp, 'agentd.log');
  let offset = existsSync(agentdLog) ? readFileSync(agentdLog).length : 0;
  const readAgentdLog = () => {
    const fd = openSync(agentdLog, 'r');
    const chunk = Buffer.alloc(1 << 20);
    let got;
    while ((got = readSync(fd, chunk, 0, chunk.length, offset)) > 0) { offset += got; gates.feed(chunk.toString('utf8', 0, got)); }
    closeSync(fd);
  };
  const readers = [/^launcher launcher stdin$/, /^launcher launcher server stdout$/, /^server server agentd links$/, /^agentd conn \d+$/];
  const paused = await until(() => { readAgentdLog(); return readers.every((re) => gates.holds(re)); }, 60000, 'every process stops reading')
    .then(() => true, () => false);
  const grew = {};
  for (const [name, pid] of Object.entries(pids)) grew[name] = statusKiB(pid, 'VmHWM') - base[name];
  console.log(`# ${n} list calls unread (answers of ${size} bytes): grew ${JSON.stringify(grew)} KiB`);
  for (const [name, kib] of Object.entries(grew)) {
    assert.ok(kib < GROWTH_BOUND_KIB, `${name} grew ${kib} KiB (bound ${GROWTH_BOUND_KIB}) for a host that sent ${n} calls and reads none`);
  }
  assert.ok(paused, `every process stops reading its peer; held: ${JSON.stringify([...gates.held])}`);
  if (whilePaused) await whilePaused(pids);

  // the host reads again: every call is answered, once
  l.read();
  await until(() => { for (let id = 1; id <= n; id++) if (!l.frames.has(id)) return false; return true; }, 300000, `all ${n} answers`);
  await l.close();
  assert.deepEqual(l.bad, [], 'every line on stdout is JSON');
  for (let id = 1; id <= n; id++) {
    assert.equal(l.seen.get(id), 1, `call ${id} answered ${l.seen.get(id)} times`);
    const r = l.frames.get(id).result;
    assert.ok(r && !r.isError && r.structuredContent.sessions.length === 1, `call ${id}: ${JSON.stringify(l.frames.get(id)).slice(0, 300)}`);
  }
  return grew;
}

// The session every list shows: its task is 5 MB; its first turn is over.
before(async () => {
  const l = startLauncher(new Gates());
  try {
    await l.request('init', 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'hog', version: '1' } });
    l.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const spawned = await l.request('spawn', 'tools/call', { name: 'reasonix_spawn', arguments: { task: 'x'.repeat(TASK_BYTES) } });
    const sid = spawned.result.structuredContent.session_id;
    const watched = await l.request('watch', 'tools/call', { name: 'reasonix_watch', arguments: { session_ids: [sid] } });
    assert.equal(watched.result.structuredContent.results[sid].status, 'idle');
    await l.close();
  } finally {
    if (l.child.exitCode === null && l.child.signalCode === null) l.child.kill('SIGKILL');
  }
});

test('a host that sends 1000 list calls of a 5 MB task and reads none: each process stays under a bound, flat in the count, and every call is answered once', async () => {
  const few = await round(200);
  const many = await round(1000);
  for (const name of Object.keys(few)) {
    assert.ok(many[name] < few[name] + FLAT_SLACK_KIB,
      `${name}: 1000 calls cost ${many[name]} KiB, 200 calls ${few[name]} KiB: memory must not grow with the count`);
  }
});

test('a server killed while the host reads nothing: once it reads, every call is answered once, none cut', async () => {
  // the server sits with an answer half written to its stdout (a 1 MB line, a 64 KB pipe): that
  // half is dropped, and the call runs again on the next server like every call still in flight
  let killed;
  await round(100, { paused: async ({ server }) => {
    killed = server;
    process.kill(server, 'SIGKILL');
    await until(() => !existsSync(`/proc/${server}/status`) || /State:\s*Z/.test(readFileSync(`/proc/${server}/status`, 'utf8')), 10000, 'the server dead');
  } });
  assert.ok(killed);
});
