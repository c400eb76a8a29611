// The sandbox agentd starts an agent in (issue 35), proved by escapes: the real agent, driven by the
// scripted provider, runs a shell command that tries each escape from inside an agent of each
// level. Without a sandbox every escape succeeds (so each check can fail); in `workspace` and
// `strict` each fails and the test shows the target untouched. A victim agent of another
// orchestrator, in a git worktree of its own, is the other agent an escape aims at. The agent still
// works inside: it edits, runs a build command in its workspace, answers and resumes.
// needs: agent python3 clients git bwrap
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { once } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { useFixture, tool, callTool, watchUntil, agentdPid, sandboxProcesses, until, alive, withTimeout, shutdownAgentd, BIN, RUN_ID } from './helpers.mjs';

const LEVELS = ['none', 'workspace', 'strict'];
const idle = (r) => r.status === 'idle' || r.status === 'exited';
const scenario = { rules: [], default: { text: 'ok' } };

const fx = useFixture({ scenario }, (f) => {
  mkdirSync(join(f.sb.home, '.ssh'), { recursive: true });
  writeFileSync(join(f.sb.home, '.ssh', 'id_ed25519'), 'SECRET-SSH-KEY\n');
  mkdirSync(join(f.sb.home, '.aws'), { recursive: true });
  writeFileSync(join(f.sb.home, '.aws', 'credentials'), '[default]\naws_secret_access_key = SECRET-AWS\n');
  const git = (...a) => execFileSync('git', ['-C', f.sb.ws, ...a], { encoding: 'utf8' });
  git('init', '-q', '-b', 'main');
  writeFileSync(join(f.sb.ws, 'README'), 'base\n');
  git('add', '-A');
  git('-c', 'user.email=t@e', '-c', 'user.name=t', 'commit', '-qm', 'base');
  writeFileSync(join(f.sb.home, '.gitconfig'), '[user]\n\tname = Fleet Owner\n\temail = owner@example.test\n');
});

// The rule that makes the agent run command for a message holding marker, and echo what it printed.
function bashRule(marker, command) {
  return [
    { name: marker, last_role: 'user', user_contains: marker, tool_calls: [{ name: 'bash', arguments: { command } }] },
    { name: marker + '-after', last_tool_name: 'bash', text: 'RAN: ', echo: 'tool_result' },
  ];
}

// Sends sid a message that runs command (a fresh rule), waits for the turn's end; returns its message.
async function run(client, sid, marker, command) {
  await fx.provider.setScenario({ rules: bashRule(marker, command), default: { text: 'ok' } });
  await tool(client, 'reasonix_send', { session_id: sid, message: `${marker} go` });
  const r = (await watchUntil(client, [sid], idle))[sid];
  return r.message || '';
}

// Reads a file the agent left in dir, or '' when there is none.
const left = (dir, name) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), 'utf8') : '');

test('escapes: each succeeds without a sandbox and fails in workspace and strict, the target untouched', async () => {
  const victim = await fx.connect({ name: 'victim-host', env: fx.env({ REASONIX_MCP_ORCHESTRATOR_ID: 'victim-orch' }) });
  const v = await tool(victim.client, 'reasonix_spawn', { task: 'victim waits', isolate: 'worktree', keep_alive: true });
  await watchUntil(victim.client, [v.session_id], idle);
  const vwt = v.worktree.path;
  writeFileSync(join(vwt, 'secret.txt'), 'VICTIM-SECRET\n');
  const vrow = (await tool(victim.client, 'reasonix_list', { detail: true })).sessions.find((s) => s.session_id === v.session_id);
  const vpid = vrow.agent_pid;
  assert.ok(vpid && alive(vpid), 'the victim agent runs');
  const daemon = agentdPid(fx.sb);

  // a listener on 127.0.0.1 that no sandbox allows: each connection is counted
  let reached = 0;
  const listener = createServer((sock) => { reached++; sock.end(); });
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const port = listener.address().port;

  // our binary and its Lua tree stay runnable inside (wherever the checkout is): the socket escapes
  // then meet the socket's own boundary, not a missing program
  const readable = `${dirname(BIN)}:${join(dirname(BIN), '..', 'lua')}`;
  // an orchestrator with a HOME of its own: the sandbox still hides agentd's (where the keys are)
  const otherHome = join(fx.sb.ws, 'other-home');
  mkdirSync(otherHome);
  const { client } = await fx.connect({ name: 'attacker-host', env: fx.env({ REASONIX_MCP_SANDBOX_READ: readable, HOME: otherHome }) });
  // a Unix socket of the host's /tmp (as an X server's or an ssh agent's)
  const sockPath = `/tmp/rmcp-escape-${RUN_ID}.sock`;
  let sockReached = 0;
  const unixServer = createServer((sk) => { sockReached++; sk.end(); });
  unixServer.listen(sockPath);
  await once(unixServer, 'listening');
  const outcomes = {};
  try {
    for (const level of LEVELS) {
      const dir = join(fx.sb.ws, `attacker-${level}`);
      mkdirSync(dir);
      const a = await tool(client, 'reasonix_spawn', { task: `attacker ${level}`, cwd: dir, sandbox: level, keep_alive: true });
      assert.equal(a.posture.enforced.sandbox, level, JSON.stringify(a.posture));
      await watchUntil(client, [a.session_id], idle);
      const sid = a.session_id;
      const esc = {};
      const mark = (name) => `ESC-${name}-${level}-${RUN_ID}`;

      await run(client, sid, mark('write'), `echo PWNED > ${fx.sb.ws}/escape-${level}.txt`);
      esc.write_outside = existsSync(join(fx.sb.ws, `escape-${level}.txt`));
      await run(client, sid, mark('ssh'), `cat ${fx.sb.home}/.ssh/id_ed25519 > leak-ssh.txt`);
      esc.read_ssh_key = left(dir, 'leak-ssh.txt').includes('SECRET-SSH-KEY');
      await run(client, sid, mark('aws'), `cat ${fx.sb.home}/.aws/credentials > leak-aws.txt`);
      esc.read_aws_credentials = left(dir, 'leak-aws.txt').includes('SECRET-AWS');
      await run(client, sid, mark('wtread'), `cat ${vwt}/secret.txt > leak-wt.txt`);
      esc.read_other_worktree = left(dir, 'leak-wt.txt').includes('VICTIM-SECRET');
      await run(client, sid, mark('wtwrite'), `echo HIJACKED >> ${vwt}/secret.txt`);
      esc.write_other_worktree = readFileSync(join(vwt, 'secret.txt'), 'utf8').includes('HIJACKED');
      writeFileSync(join(vwt, 'secret.txt'), 'VICTIM-SECRET\n');
      await run(client, sid, mark('list'), `REASONIX_MCP_HOME=${fx.sb.mcp} ${BIN} ctl --orchestrator victim-orch --json list > leak-list.txt`);
      esc.socket_list = left(dir, 'leak-list.txt').includes(v.session_id);
      const steer = `STEERED-${level}-${RUN_ID}`;
      await run(client, sid, mark('steer'), `REASONIX_MCP_HOME=${fx.sb.mcp} ${BIN} ctl --orchestrator victim-orch send ${v.session_id} ${steer}`);
      esc.socket_steer = (await fx.provider.requests()).some((r) => JSON.stringify(r).includes(steer) && !JSON.stringify(r).includes('ctl --orchestrator'));
      if (esc.socket_steer) await watchUntil(victim.client, [v.session_id], idle);
      const stopped = () => / T /.test(readFileSync(`/proc/${vpid}/stat`, 'latin1').replace(/^\d+ \(.*\)/, ''));
      assert.equal(stopped(), false, 'the victim runs before the signal');
      await run(client, sid, mark('signal'), `kill -STOP ${vpid} && echo stopped > sig.txt`);
      esc.signal_other_agent = stopped();
      process.kill(vpid, 'SIGCONT');
      await run(client, sid, mark('ptrace'), `python3 -c "import ctypes,os; l=ctypes.CDLL(None); r=l.ptrace(16, ${vpid}, 0, 0); print(r); r == 0 and os.waitpid(${vpid}, 0); r == 0 and l.ptrace(17, ${vpid}, 0, 0)" > ptrace.txt`);
      esc.ptrace_other_agent = left(dir, 'ptrace.txt').trim() === '0';
      process.kill(vpid, 'SIGCONT'); // (an attach stops the tracee: the victim goes on either way)
      await run(client, sid, mark('environ'), `tr '\\0' '\\n' < /proc/${daemon}/environ > leak-env.txt`);
      esc.read_proc_environ = left(dir, 'leak-env.txt').includes('REASONIX_MCP_HOME=');
      await run(client, sid, mark('log'), `cat ${fx.sb.mcp}/agentd.log > leak-log.txt`);
      esc.read_reasonix_mcp_home = left(dir, 'leak-log.txt').includes('agentd');
      const tmpName = `/tmp/escape-${level}-${RUN_ID}`;
      await run(client, sid, mark('tmp'), `echo X > ${tmpName}`);
      esc.write_shared_tmp = existsSync(tmpName);
      rmSync(tmpName, { force: true });
      const sockBefore = sockReached;
      await run(client, sid, mark('unix'), `python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('${sockPath}'); print('connected')"`);
      esc.connect_host_unix_socket = sockReached > sockBefore;
      const before = reached;
      await run(client, sid, mark('net'), `(exec 3<>/dev/tcp/127.0.0.1/${port}) && echo connected > net.txt`);
      esc.reach_unlisted_host = reached > before;
      const sleeper = 3600 + LEVELS.indexOf(level);
      await run(client, sid, mark('left'), `setsid nohup sleep ${sleeper} >/dev/null 2>&1 & echo started`);
      await tool(client, 'reasonix_stop', { session_id: sid });
      const lingering = () => sandboxProcesses(fx.sb).filter((p) => p.cmd === `sleep ${sleeper}`);
      if (level !== 'none') await until(() => lingering().length === 0, 5000, 'the sandbox ends with its agent');
      esc.process_left_after_stop = lingering().length > 0;
      for (const p of lingering()) process.kill(p.pid, 'SIGKILL');
      outcomes[level] = esc;
    }
  } finally {
    listener.close();
    unixServer.close();
  }
  console.log(`# escapes (true: it worked): ${JSON.stringify(outcomes)}`);
  const names = Object.keys(outcomes.none);
  assert.ok(names.length >= 15, `${names.length} escapes tried`);
  for (const name of names) {
    // the network of a workspace sandbox is the host's: only strict limits it
    const open = name === 'reach_unlisted_host' ? ['none', 'workspace'] : ['none'];
    for (const level of LEVELS) {
      assert.equal(outcomes[level][name], open.includes(level), `${name} in ${level}: ${JSON.stringify(outcomes[level])}`);
    }
  }
  assert.ok(alive(vpid), 'the victim agent is untouched');
});

test('inside a sandbox the agent still works: edits, builds in its workspace, answers, resumes with its history', async () => {
  const { client } = await fx.connect({ name: 'worker-host' });
  for (const level of ['workspace', 'strict']) {
    const marker = `WORK-${level}-${RUN_ID}`;
    await fx.provider.setScenario({ rules: [
      { name: 'edit', last_role: 'user', user_contains: `${marker}-edit`, tool_calls: [{ name: 'write_file', arguments: { path: 'src.txt', content: 'made inside\n' } }] },
      { name: 'edited', last_tool_name: 'write_file', tool_calls: [{ name: 'bash', arguments: { command: 'cp src.txt build.out && echo built' } }] },
      { name: 'built', last_tool_name: 'bash', text: 'BUILD: ', echo: 'tool_result' },
      { name: 'recall', last_role: 'user', user_contains: `${marker}-recall`, text: 'RECALLED: ', echo: 'all' },
    ], default: { text: 'ok' } });
    const w = await tool(client, 'reasonix_spawn', { task: `${marker}-edit now`, sandbox: level, isolate: 'worktree' });
    const r = (await watchUntil(client, [w.session_id], idle))[w.session_id];
    assert.match(r.message, /BUILD: .*built/s, JSON.stringify(r));
    assert.equal(readFileSync(join(w.worktree.path, 'build.out'), 'utf8'), 'made inside\n', 'the build wrote in its worktree');
    await tool(client, 'reasonix_stop', { session_id: w.session_id });
    const again = await tool(client, 'reasonix_resume', { session_id: w.session_id });
    assert.equal(again.posture.enforced.sandbox, level, 'resume keeps the sandbox');
    await tool(client, 'reasonix_send', { session_id: w.session_id, message: `${marker}-recall what you did` });
    await watchUntil(client, [w.session_id], idle);
    const asked = (await fx.provider.requests()).map((q) => JSON.stringify(q)).filter((q) => q.includes(`${marker}-recall`));
    assert.ok(asked.length > 0 && asked.every((q) => q.includes(`${marker}-edit now`)), 'the resumed agent sent its history to the model');
    await tool(client, 'reasonix_stop', { session_id: w.session_id });
  }
});

// A fresh repository with one commit at dir (made outside any agent).
function makeRepo(dir) {
  mkdirSync(dir, { recursive: true });
  const g = (...a) => execFileSync('git', ['-C', dir, ...a], { encoding: 'utf8' });
  g('init', '-q', '-b', 'main');
  writeFileSync(join(dir, 'README'), 'base\n');
  g('add', '-A');
  g('commit', '-qm', 'base');
  return g;
}

test('git in a sandbox: a worktree agent commits as you and touches nothing else of the repository; a checkout is read-only; nothing planted runs outside', async () => {
  const { client } = await fx.connect({ name: 'git-host' });
  const outcomes = {};
  const ranMarker = join(fx.sb.ws, 'fsmonitor-ran');
  for (const level of LEVELS) {
    const mark = (name) => `GIT-${name}-${level}-${RUN_ID}`;
    const esc = {};
    // an isolated agent: a linked worktree of a repository of its own
    const repo = join(fx.sb.ws, `git-wt-${level}`);
    const g = makeRepo(repo);
    const common = join(repo, '.git');
    const readmeObject = (() => { const id = g('rev-parse', 'HEAD:README').trim(); return join(common, 'objects', id.slice(0, 2), id.slice(2)); })();
    const objectBefore = readFileSync(readmeObject);
    const mainBefore = g('rev-parse', 'main').trim();
    const a = await tool(client, 'reasonix_spawn', { task: `git ${level}`, cwd: repo, isolate: 'worktree', sandbox: level, keep_alive: true });
    await watchUntil(client, [a.session_id], idle);
    const sid = a.session_id;
    const wt = a.worktree.path;
    const said = await run(client, sid, mark('commit'), 'echo made > made.txt && git add made.txt && git commit -qm from-agent && git log --oneline -1 main && echo COMMITTED');
    assert.match(said, /COMMITTED/, `${level}: the agent commits in its worktree, and sees the repository's history: ${said}`);
    assert.equal(g('log', '-1', '--format=%an <%ae> %s', a.worktree.branch).trim(), 'Fleet Owner <owner@example.test> from-agent',
      `${level}: at the turn's end the commit is on its branch in the repository, as you`);
    assert.equal(g('fsck', '--no-dangling').trim(), '', `${level}: the repository is whole`);
    await run(client, sid, mark('hook'), `printf '#!/bin/sh\ntouch ${fx.sb.ws}/hooked\n' > "${common}/hooks/post-checkout" || printf '#!/bin/sh\ntouch ${fx.sb.ws}/hooked\n' > "$(git rev-parse --git-common-dir)/hooks/post-checkout"`);
    esc.plant_repo_hook = existsSync(join(common, 'hooks', 'post-checkout'));
    await run(client, sid, mark('config'), `git config --file "${common}/config" core.fsmonitor "touch ${ranMarker}" || git config core.fsmonitor "touch ${ranMarker}"`);
    esc.write_repo_config = readFileSync(join(common, 'config'), 'utf8').includes('fsmonitor');
    await run(client, sid, mark('object'), `chmod u+w "${readmeObject}"; printf junk > "${readmeObject}"`);
    esc.overwrite_repo_object = !readFileSync(readmeObject).equals(objectBefore);
    if (esc.overwrite_repo_object) { chmodSync(readmeObject, 0o644); writeFileSync(readmeObject, objectBefore); }
    await run(client, sid, mark('main'), 'git update-ref refs/heads/main HEAD');
    const gitdir = readFileSync(join(wt, '.git'), 'utf8');
    const own = gitdir.replace(/^gitdir:\s*/, '').trim();
    await run(client, sid, mark('wtconfig'), `printf '[core]\\n\\tfsmonitor = touch ${ranMarker}\\n' >> "$(git rev-parse --git-dir)/config.worktree"`);
    esc.write_worktree_config = existsSync(join(own, 'config.worktree')) && readFileSync(join(own, 'config.worktree'), 'utf8').includes('fsmonitor');
    await run(client, sid, mark('reflog'), `ln -sf ${fx.sb.ws}/reflog-target-${level} "$(git rev-parse --git-dir)/logs/HEAD" && echo linked`);
    const commondir = readFileSync(join(own, 'commondir'), 'utf8');
    await run(client, sid, mark('commondir'), 'echo /nowhere > "$(git rev-parse --git-dir)/commondir"');
    esc.redirect_commondir = readFileSync(join(own, 'commondir'), 'utf8') !== commondir;
    await run(client, sid, mark('dotgit'), 'echo "gitdir: /nowhere" > .git');
    esc.redirect_dot_git = readFileSync(join(wt, '.git'), 'utf8') !== gitdir;
    await tool(client, 'reasonix_stop', { session_id: sid });
    esc.move_main_branch = g('rev-parse', 'main').trim() !== mainBefore;
    const isLink = () => { try { return lstatSync(join(own, 'logs', 'HEAD')).isSymbolicLink(); } catch { return false; } };
    if (level !== 'none') await until(() => !isLink(), 10000, 'the symlink in its git dir to go with the agent');
    esc.leave_symlink_in_git_dir = isLink();

    // an agent whose cwd is a whole checkout: its .git is read-only, whole
    const co = join(fx.sb.ws, `git-co-${level}`);
    const c = makeRepo(co);
    const b = await tool(client, 'reasonix_spawn', { task: `checkout ${level}`, cwd: co, sandbox: level, keep_alive: true });
    await watchUntil(client, [b.session_id], idle);
    const seen = await run(client, b.session_id, mark('co-log'), 'git log --format=%s -1 && git status --short && echo READ');
    assert.match(seen, /base[\s\S]*READ/, `${level}: the agent reads its checkout's history: ${seen}`);
    await run(client, b.session_id, mark('co-commit'), 'echo made > made.txt && git add made.txt && git commit -qm in-checkout');
    esc.commit_in_checkout = c('log', '-1', '--format=%s').trim() === 'in-checkout';
    await run(client, b.session_id, mark('co-hook'), 'printf "#!/bin/sh\\ntrue\\n" > .git/hooks/pre-commit');
    esc.plant_checkout_hook = existsSync(join(co, '.git', 'hooks', 'pre-commit'));
    await run(client, b.session_id, mark('co-config'), 'git config core.hooksPath /tmp/evil-hooks');
    esc.write_checkout_config = readFileSync(join(co, '.git', 'config'), 'utf8').includes('evil-hooks');
    await run(client, b.session_id, mark('co-commondir'), 'echo ../evil > .git/commondir');
    esc.redirect_checkout_commondir = existsSync(join(co, '.git', 'commondir'));
    await run(client, b.session_id, mark('co-move'), 'mv .git .git.old && mkdir .git && echo moved');
    esc.replace_checkout_git_dir = existsSync(join(co, '.git.old'));
    await tool(client, 'reasonix_stop', { session_id: b.session_id });
    outcomes[level] = esc;
  }
  console.log(`# git escapes (true: it worked): ${JSON.stringify(outcomes)}`);
  const names = Object.keys(outcomes.none);
  assert.ok(names.length >= 13, `${names.length} git escapes tried`);
  for (const name of names) {
    for (const level of LEVELS) {
      assert.equal(outcomes[level][name], level === 'none', `${name} in ${level}: ${JSON.stringify(outcomes[level])}`);
    }
  }
  assert.equal(existsSync(ranMarker), false, 'no fsmonitor the agents planted ran outside a sandbox');
});

test("agentd's own git never runs what an agent planted in its worktree (a submodule whose git dir runs an fsmonitor)", async () => {
  const { client } = await fx.connect({ name: 'plant-host' });
  const marker = join(fx.sb.ws, `agentd-ran-${RUN_ID}`);
  const repo = join(fx.sb.ws, 'git-plant');
  makeRepo(repo);
  const a = await tool(client, 'reasonix_spawn', { task: 'plant', cwd: repo, isolate: 'worktree', keep_alive: true });
  await watchUntil(client, [a.session_id], idle);
  const plant = 'git init -q --separate-git-dir="$PWD/xgit" x && echo y > x/f && git -C x add f && '
    + 'git -C x -c user.email=a@b -c user.name=a commit -qm sub && '
    + `git config --file xgit/config core.fsmonitor "touch ${marker}" && `
    + 'git update-index --add --cacheinfo 160000,$(git -C x rev-parse HEAD),x && echo x2 > x/f && echo PLANTED';
  const said = await run(client, a.session_id, `PLANT-${RUN_ID}`, plant);
  assert.match(said, /PLANTED/, said);
  // the turn's end read the changes with git; so does a diff and an info
  await tool(client, 'reasonix_worktree', { session_id: a.session_id, action: 'diff' });
  await tool(client, 'reasonix_worktree', { session_id: a.session_id, action: 'info' });
  assert.equal(existsSync(marker), false, "the planted fsmonitor never ran for agentd's git");
  await tool(client, 'reasonix_stop', { session_id: a.session_id });
});

test('a sandbox path is confined as a cwd is: outside the project it is refused, naming the path', async () => {
  const { client } = await fx.connect({ name: 'confine-host' });
  const r = await callTool(client, 'reasonix_spawn', { task: 'x', sandbox: { level: 'workspace', read: ['/etc'] } });
  assert.equal(r.result.isError, true);
  assert.match(r.result.content[0].text, /sandbox\.read path \/etc is outside the project dir/);
  const bad = await callTool(client, 'reasonix_spawn', { task: 'x', sandbox: 'locked-down' });
  assert.match(bad.result.content[0].text, /sandbox level must be none, workspace or strict/);
});

test('a live handover keeps a strict agent, and its network: the gate opens again in the new image', async (t) => {
  await shutdownAgentd(fx.sb); // ours must start from the installed copy below
  const exe = join(fx.sb.bin, 'reasonix-mcp-live');
  copyFileSync(BIN, exe);
  chmodSync(exe, 0o755);
  const transport = new StdioClientTransport({ command: exe, args: [], cwd: fx.sb.ws, stderr: 'pipe',
    env: fx.env({ REASONIX_MCP_RELOAD_GRACE_MS: '100', REASONIX_MCP_LIVE_HANDOVER: '1' }) });
  const client = new Client({ name: 'handover-host', version: '1.0.0' }, { capabilities: {} });
  await withTimeout(client.connect(transport), 15000, 'MCP initialize through the launcher');
  t.after(() => client.close().catch(() => {}));
  await fx.provider.setScenario({ rules: [{ name: 'after', last_role: 'user', user_contains: 'AFTER-HANDOVER', text: 'still online' }],
    default: { text: 'ok' } });
  const a = await tool(client, 'reasonix_spawn', { task: 'strict through a handover', sandbox: 'strict', keep_alive: true });
  await watchUntil(client, [a.session_id], idle);
  const daemon = agentdPid(fx.sb);
  const before = (await tool(client, 'reasonix_list', { detail: true })).sessions.find((s) => s.session_id === a.session_id).agent_pid;
  const tmp = `${exe}.new`;
  copyFileSync(BIN, tmp);
  chmodSync(tmp, 0o755);
  renameSync(tmp, exe);
  const ino = statSync(exe).ino;
  await until(() => statSync(`/proc/${daemon}/exe`).ino === ino, 20000, 'agentd to re-execute the new file');
  // (the exe link turns before the kernel has set the new image's command line and environment up,
  // where agentdPid reads them: an ASan build's larger image widens that window)
  await until(() => agentdPid(fx.sb) !== null, 20000, 'the new image to be set up');
  assert.equal(agentdPid(fx.sb), daemon, 'same daemon pid');
  await tool(client, 'reasonix_send', { session_id: a.session_id, message: 'AFTER-HANDOVER are you there' });
  const r = (await watchUntil(client, [a.session_id], idle))[a.session_id];
  assert.equal(r.message, 'still online', JSON.stringify(r));
  const after = (await tool(client, 'reasonix_list', { detail: true })).sessions.find((s) => s.session_id === a.session_id).agent_pid;
  assert.equal(after, before, 'the same agent process, its sandbox untouched');
  await tool(client, 'reasonix_stop', { session_id: a.session_id });
});
