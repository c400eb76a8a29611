// A second ACP agent through an agent profile: Claude Code's ACP adapter (@zed-industries/
// claude-code-acp, from npm) against a scripted Anthropic API on 127.0.0.1, chosen by the policy
// examples/claude_code_acp.lua. The same checks as for reasonix: spawn and a streamed turn, a second
// turn, steer (queued for the turn's end, or refused with expect=steer), options applied or warned
// (results echo the agent's effective values; strict refuses), its TodoWrite as the plan, models
// listed, a permission request answered, yolo kept when the agent withholds its no-asking mode, stop
// (the agent ignores stdin EOF), resume with its history, kill -9 of agentd leaving nothing behind,
// and `doctor` checking the profile.
// needs: python3 clients acp-agent
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, copyFileSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { useFixture, tool, callTool, until, sandboxProcesses, agentdPid, alive, REPO, BIN } from './helpers.mjs';
import { startAnthropicApi } from './anthropic_api.mjs';

const SLOW = 'slowly streaming. '.repeat(30);
const writeRule = { contains: 'WRITE-IT', tool: 'Write', input: { file_path: '', content: 'from claude\n' } }; // path set by the test
let api;
before(async () => {
  api = await startAnthropicApi([
    { contains: 'HELLO-ONE', text: 'first answer from claude' },
    { contains: 'SECOND-TURN', text: 'second answer' },
    { contains: 'SLOW-TURN', text: SLOW + 'SLOW-END', chunk: 18, delayMs: 60 },
    { contains: 'FOLLOW-UP', text: 'the queued message ran' },
    writeRule,
    { afterTool: 'Write', text: 'wrote it' },
    { contains: 'RECALL', text: 'recalled' },
    { contains: 'PLAN-IT', tool: 'TodoWrite', input: { todos: [{ content: 'read the code', status: 'completed', activeForm: 'Reading the code' },
      { content: 'write the fix', status: 'in_progress', activeForm: 'Writing the fix' }] } },
    { afterTool: 'TodoWrite', text: 'planned' },
  ]);
});
after(() => api.stop());
const fx = useFixture({}, (f) => {
  mkdirSync(join(f.sb.mcp, 'policy'), { recursive: true, mode: 0o700 });
  copyFileSync(join(REPO, 'examples', 'claude_code_acp.lua'), join(f.sb.mcp, 'policy', 'claude_code_acp.lua'));
});
const env = () => fx.env({
  CLAUDE_CODE_ACP: join(REPO, 'tests', 'e2e', 'node_modules', '.bin', 'claude-code-acp'),
  ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: 'scripted-key', CLAUDE_CONFIG_DIR: join(fx.sb.home, '.claude'),
  DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
});
const claudeProcesses = () => sandboxProcesses(fx.sb).filter((p) => /claude-code-acp|claude-agent-sdk/.test(p.cmd));
let client;

test('spawn, a streamed turn and a second one; options applied or warned, the agent\'s own values echoed', async () => {
  ({ client } = await fx.connect({ name: 'acp-host', env: env() }));
  const s = await tool(client, 'reasonix_spawn', { task: 'HELLO-ONE say hi' });
  assert.equal(s.model, 'default', 'the agent\'s own default, not the requested mock model');
  assert.ok(s.warnings.some((w) => /default model mock\/mock-model is not offered by this agent/.test(w)), JSON.stringify(s.warnings));
  assert.ok(['bypassPermissions', 'acceptEdits'].includes(s.agent_config.mode), JSON.stringify(s.agent_config));
  const w = await tool(client, 'reasonix_watch', { session_ids: [s.session_id] });
  assert.match(w.results[s.session_id].message, /first answer from claude/);
  const sent = await tool(client, 'reasonix_send', { session_id: s.session_id, message: 'SECOND-TURN go on' });
  assert.equal(sent.delivered, 'new_turn');
  const w2 = await tool(client, 'reasonix_watch', { session_ids: [s.session_id] });
  assert.match(w2.results[s.session_id].message, /second answer/);
  const first = api.requests.find((r) => JSON.stringify(r.body).includes('HELLO-ONE'));
  assert.match(JSON.stringify(first.body), /TodoWrite tool/, 'the status contract names this agent\'s plan tool');

  const opus = await tool(client, 'reasonix_spawn', { task: 'HELLO-ONE again', model: 'opus', effort: 'high', tool_approval: 'auto' });
  assert.equal(opus.model, 'opus', 'set through ACP set_model');
  assert.equal(opus.effort, undefined, 'not applied, not echoed');
  assert.ok(opus.warnings.includes('effort high not applied: this agent has no such option'), JSON.stringify(opus.warnings));
  assert.equal(opus.agent_config.mode, 'acceptEdits');
  const strict = await callTool(client, 'reasonix_spawn', { task: 'HELLO-ONE strict', effort: 'high', strict: true });
  assert.match(strict.result.content[0].text, /effort high not applied: this agent has no such option/, 'strict: refused, not warned');
  const bad = await callTool(client, 'reasonix_spawn', { task: 'x', model: 'gpt-9' });
  assert.match(bad.result.content[0].text, /model "gpt-9" is not offered by the agent \(valid: default, opus/);
  const models = await tool(client, 'reasonix_models', {});
  assert.ok(models.models.some((m) => m.ref === 'haiku'), JSON.stringify(models));
  const planned = await tool(client, 'reasonix_spawn', { task: 'PLAN-IT and go' });
  const wp = await tool(client, 'reasonix_watch', { session_ids: [planned.session_id] });
  assert.deepEqual(wp.results[planned.session_id].plan?.map((e) => [e.content, e.status]),
    [['read the code', 'completed'], ['write the fix', 'in_progress']], 'its TodoWrite is the plan the orchestrator sees');
  for (const id of [s.session_id, opus.session_id, planned.session_id]) await tool(client, 'reasonix_stop', { session_id: id });
  let doctor = '';
  try { doctor = execFileSync(BIN, ['doctor'], { env: env(), cwd: fx.sb.ws, encoding: 'utf8', timeout: 60000 }); } catch (e) { doctor = e.stdout; }
  assert.match(doctor, /\[ok {2}\] agent profile +profile claude-code: \S+claude-code-acp\n +agent @zed-industries\/claude-code-acp 0\.16\.2; options by acp; models: default, opus.*; modes: default, acceptEdits.*; steer queued for the turn's end/,
    'doctor checks the profile: the agent starts, initializes, and what it offers');
});

test('steer: a message for a running turn waits for its end and starts the next; expect=steer is refused', async () => {
  const s = await tool(client, 'reasonix_spawn', { task: 'SLOW-TURN stream a while' });
  await until(() => api.requests.some((r) => JSON.stringify(r.body).includes('SLOW-TURN')), 20000, 'the slow turn asked its model');
  const refused = await callTool(client, 'reasonix_send', { session_id: s.session_id, message: 'x', expect: 'steer' });
  assert.match(refused.result.content[0].text, /cannot be steered mid-turn; the message was not delivered/);
  const queued = await tool(client, 'reasonix_send', { session_id: s.session_id, message: 'FOLLOW-UP after it' });
  assert.equal(queued.delivered, 'queued');
  const w = await tool(client, 'reasonix_watch', { session_ids: [s.session_id] });
  assert.match(w.results[s.session_id].message, /the queued message ran/, 'one watch: the queued message ran as the next turn');
  await tool(client, 'reasonix_stop', { session_id: s.session_id });
});

test('a permission request is answered by its own option id; yolo is kept when the agent withholds its no-asking mode', async () => {
  const target = join(fx.sb.ws, 'acp.txt');
  writeRule.input.file_path = target;
  const s = await tool(client, 'reasonix_spawn', { task: `WRITE-IT into ${target}`, tool_approval: 'ask' });
  const w = await tool(client, 'reasonix_watch', { session_ids: [s.session_id] });
  const req = w.results[s.session_id].permission_request;
  assert.ok(req, JSON.stringify(w.results[s.session_id]));
  const allow = req.options.find((o) => o.kind === 'allow_once');
  assert.ok(allow, JSON.stringify(req.options));
  await tool(client, 'reasonix_respond_permission', { session_id: s.session_id, option_id: allow.optionId });
  const done = await tool(client, 'reasonix_watch', { session_ids: [s.session_id] });
  assert.match(done.results[s.session_id].message, /wrote it/);
  assert.equal(readFileSync(target, 'utf8'), 'from claude\n', 'the answered write ran');

  const yolo = join(fx.sb.ws, 'yolo.txt');
  writeRule.input.file_path = yolo;
  const y = await tool(client, 'reasonix_spawn', { task: 'WRITE-IT without asking', tool_approval: 'yolo' });
  const wy = await tool(client, 'reasonix_watch', { session_ids: [y.session_id] });
  assert.equal(wy.results[y.session_id].permission_request, undefined, 'yolo: nobody was asked');
  assert.match(wy.results[y.session_id].message, /wrote it/);
  assert.ok(existsSync(yolo));
  for (const id of [s.session_id, y.session_id]) await tool(client, 'reasonix_stop', { session_id: id });
});

test('stop ends the agent although it ignores EOF; resume goes on with its history; kill -9 of agentd leaves nothing', async () => {
  const s = await tool(client, 'reasonix_spawn', { task: 'HELLO-ONE remember this' });
  await tool(client, 'reasonix_watch', { session_ids: [s.session_id] });
  assert.ok(claudeProcesses().length >= 1);
  const t0 = Date.now();
  await tool(client, 'reasonix_stop', { session_id: s.session_id });
  await until(() => claudeProcesses().length === 0, 10000, 'the agent is gone after stop');
  console.log(`# stop -> every agent process gone in ${Date.now() - t0} ms`);
  const r = await tool(client, 'reasonix_resume', { session_id: s.session_id });
  assert.equal(r.status, 'idle');
  await tool(client, 'reasonix_send', { session_id: s.session_id, message: 'RECALL what I said' });
  const w = await tool(client, 'reasonix_watch', { session_ids: [s.session_id] });
  assert.match(w.results[s.session_id].message, /recalled/);
  const recall = api.requests.filter((x) => JSON.stringify(x.body).includes('RECALL')).pop();
  assert.match(JSON.stringify(recall.body.messages), /HELLO-ONE remember this/, 'the resumed agent has its history');
  const pid = agentdPid(fx.sb);
  assert.ok(claudeProcesses().length >= 1);
  process.kill(pid, 'SIGKILL');
  const t1 = Date.now();
  await until(() => !alive(pid) && claudeProcesses().length === 0, 15000, 'every agent process gone after kill -9 of agentd');
  console.log(`# kill -9 agentd -> every agent process gone in ${Date.now() - t1} ms`);
});
