// Agents on another host over ssh, through the policy examples/ssh_remote.lua: an sshd the test
// starts on 127.0.0.1 (Debian's openssh-server, a private host key, client key and config) runs
// the real agent on the "remote" side. The same checks as locally: spawn and a turn, the sandbox
// posture probed over ssh, steer, stop (ssh and the remote agent gone), resume, models, kill -9 of
// agentd leaving nothing on either side, and a remote agent that ignores EOF ended all the same.
// needs: agent python3 clients sshd
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, copyFileSync, writeFileSync, existsSync } from 'node:fs';
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { useFixture, tool, callTool, until, sandboxProcesses, agentdPid, alive, agentBin, REPO, RUN_ID, BIN, withTimeout } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'hello', last_role: 'user', user_contains: 'REMOTE-HELLO', text: 'hello from the remote agent' },
    { name: 'slow', last_role: 'user', user_contains: 'REMOTE-SLOW', text: 'remote streaming '.repeat(40), chunk: 17, delay: 0.05 },
    { name: 'steered', last_role: 'user', user_contains: 'REMOTE-STEER', text: 'the steer reached the remote agent' },
  ],
  default: { text: 'remote ok' },
};
let sshd, ssh;
const fx = useFixture({ scenario }, async (f) => {
  mkdirSync(join(f.sb.mcp, 'policy'), { recursive: true, mode: 0o700 });
  copyFileSync(join(REPO, 'examples', 'ssh_remote.lua'), join(f.sb.mcp, 'policy', 'ssh_remote.lua'));
  ssh = join(f.sb.root, 'ssh');
  mkdirSync(ssh, { mode: 0o700 });
  for (const k of ['host', 'client']) execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(ssh, k)]);
  copyFileSync(join(ssh, 'client.pub'), join(ssh, 'authorized_keys'));
  const port = await new Promise((resolve) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); }); });
  writeFileSync(join(ssh, 'sshd_config'), [`Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${join(ssh, 'host')}`,
    `AuthorizedKeysFile ${join(ssh, 'authorized_keys')}`, 'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
    'UsePAM no', 'StrictModes no', `PidFile ${join(ssh, 'sshd.pid')}`, 'PermitRootLogin prohibit-password', ''].join('\n'));
  const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
  writeFileSync(join(ssh, 'config'), ['Host remote-box', '  HostName 127.0.0.1', `  Port ${port}`, `  User ${user}`,
    `  IdentityFile ${join(ssh, 'client')}`, '  IdentitiesOnly yes', '  StrictHostKeyChecking no', '  UserKnownHostsFile /dev/null',
    '  LogLevel ERROR', ''].join('\n'));
  if (process.getuid() === 0 && !existsSync('/run/sshd')) mkdirSync('/run/sshd', { mode: 0o755 }); // its privilege-separation dir
  sshd = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', join(ssh, 'sshd_config')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  sshd.stderr.on('data', (d) => { err += d; });
  await withTimeout(new Promise((resolve, reject) => {
    sshd.stderr.on('data', () => { if (/Server listening/.test(err)) resolve(); });
    sshd.on('exit', (code) => reject(new Error(`sshd exited (${code}): ${err}`)));
  }), 10000, 'sshd listening');
});
after(() => { if (sshd && sshd.exitCode === null) sshd.kill('SIGTERM'); });
const env = () => fx.env({
  REASONIX_REMOTE_HOST: 'remote-box', REASONIX_REMOTE_SSH_CONFIG: join(ssh, 'config'), REASONIX_REMOTE_BIN: agentBin(),
  // the remote side's agent: the test's private homes and key, and this run's marker (leftover check)
  REASONIX_REMOTE_ENV: `REASONIX_HOME=${fx.sb.rx} HOME=${fx.sb.home} MOCK_API_KEY=mock-key RMCP_E2E_RUN=${RUN_ID}`,
});
// ssh clients agentd runs, and the agents sshd runs for them (in the sandbox's workspace).
const sshClients = () => sandboxProcesses(fx.sb).filter((p) => /^ssh /.test(p.cmd));
const remoteAgents = () => sandboxProcesses(fx.sb).filter((p) => p.cmd.startsWith(agentBin() + ' acp'));
let client;

test('spawn over ssh: a turn, the posture probed on the remote side, a steer', async () => {
  ({ client } = await fx.connect({ name: 'ssh-host', env: env() }));
  const s = await tool(client, 'reasonix_spawn', { task: 'REMOTE-HELLO from afar' });
  assert.ok(s.posture && s.posture.sandbox !== 'unknown', `posture over ssh: ${JSON.stringify(s.posture)}`);
  // agentd's sandbox cannot wall in another machine: asked for, it is refused, or said not to hold
  const boxed = await callTool(client, 'reasonix_spawn', { task: 'REMOTE-HELLO boxed', sandbox: 'workspace' });
  assert.equal(boxed.result.isError, true);
  assert.match(boxed.result.content[0].text, /sandbox workspace refused: the agent runs on another machine/);
  assert.doesNotMatch(s.posture.warning ?? '', /posture unknown|does not end in/, 'reasonix doctor answered over ssh');
  const w = await tool(client, 'reasonix_watch', { session_ids: [s.session_id] });
  assert.match(w.results[s.session_id].message, /hello from the remote agent/);
  assert.equal(sshClients().length, 1, 'the agent runs through one ssh client');
  assert.equal(remoteAgents().length, 1, 'and sshd runs it');
  await tool(client, 'reasonix_send', { session_id: s.session_id, message: 'REMOTE-SLOW stream' });
  const steered = await tool(client, 'reasonix_send', { session_id: s.session_id, message: 'REMOTE-STEER now', expect: 'steer' });
  assert.equal(steered.delivered, 'steer');
  await tool(client, 'reasonix_watch', { session_ids: [s.session_id] });
  const models = await tool(client, 'reasonix_models', {});
  assert.ok(models.models.some((m) => m.ref === 'mock/mock-model'), JSON.stringify(models));
  client.sid = s.session_id;
});

test('stop ends ssh and the remote agent; resume goes on; kill -9 of agentd leaves nothing on either side', async () => {
  const sid = client.sid;
  const t0 = Date.now();
  await tool(client, 'reasonix_stop', { session_id: sid });
  await until(() => sshClients().length === 0 && remoteAgents().length === 0, 10000, 'ssh and the remote agent gone after stop');
  console.log(`# stop -> ssh and the remote agent gone in ${Date.now() - t0} ms`);
  const r = await tool(client, 'reasonix_resume', { session_id: sid });
  assert.equal(r.status, 'idle');
  await tool(client, 'reasonix_send', { session_id: sid, message: 'REMOTE-HELLO again' });
  const w = await tool(client, 'reasonix_watch', { session_ids: [sid] });
  assert.match(w.results[sid].message, /hello from the remote agent/);
  await tool(client, 'reasonix_send', { session_id: sid, message: 'REMOTE-SLOW mid-turn when agentd dies' });
  const pid = agentdPid(fx.sb);
  assert.equal(remoteAgents().length, 1);
  process.kill(pid, 'SIGKILL');
  const t1 = Date.now();
  await until(() => !alive(pid) && sshClients().length === 0 && remoteAgents().length === 0, 15000, 'nothing left on either side');
  console.log(`# kill -9 agentd mid-turn -> ssh and the remote agent gone in ${Date.now() - t1} ms`);
});

test('a remote agent that ignores EOF still ends with its ssh session (the remote guard kills its group)', async () => {
  const fake = join(fx.sb.root, 'eof-deaf-agent');
  writeFileSync(fake, `#!/bin/sh\nFAKE_ACP_IGNORE_EOF=1 exec '${BIN}' script '${join(REPO, 'tests', 'fake_agent', 'fake_acp.lua')}' "$@"\n`, { mode: 0o755 });
  const deaf = await fx.connect({ name: 'ssh-deaf', env: { ...env(), REASONIX_REMOTE_BIN: fake } });
  const s = await tool(deaf.client, 'reasonix_spawn', { task: 'hello from a deaf agent' });
  await tool(deaf.client, 'reasonix_watch', { session_ids: [s.session_id] });
  const fakes = () => sandboxProcesses(fx.sb).filter((p) => /fake_acp\.lua/.test(p.cmd));
  assert.equal(fakes().length, 1, 'the remote agent runs');
  const t0 = Date.now();
  await tool(deaf.client, 'reasonix_stop', { session_id: s.session_id });
  await until(() => fakes().length === 0 && sshClients().length === 0, 15000, 'the EOF-deaf remote agent gone').catch((e) => { console.log('LEFT ' + JSON.stringify(sandboxProcesses(fx.sb))); throw e; });
  console.log(`# stop -> an EOF-deaf remote agent gone in ${Date.now() - t0} ms`);
  await deaf.close();
});
