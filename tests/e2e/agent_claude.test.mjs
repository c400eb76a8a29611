// The built-in agent "claude" (Claude Code's ACP agent, pinned, against the scripted Anthropic
// Messages API) driven through agentd by the MCP tools as reasonix is (issue 37): spawn with
// tool_approval "ask" → watch → a second turn → a write that asks permission, allowed through
// reasonix_respond_permission, lands in the session's cwd → a message sent during a slow turn is
// queued and starts the next turn → stop → resume → a turn whose API request carries every earlier
// turn → stop leaves no process. Prints spawn → first turn end through agentd against the agent
// driven directly (initialize, session/new, first prompt), medians of 3, and their ratio.
// needs: agent python3 clients acp-agent
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicApi } from './anthropic_api.mjs';
import { AGENT, agentEnv, startAgent } from './claude_acp_usage.mjs';
import { useFixture, tool, until, watchUntil, sandboxProcesses, RUN_ID } from './helpers.mjs';

const MODEL = 'claude-sonnet-4-5';
const fx = useFixture({});
let api;
after(() => api?.stop());

// The user texts of an Anthropic Messages request body (reminders and tool results left out).
const userTexts = (body) => (body.messages || []).filter((m) => m.role === 'user').flatMap((m) => (typeof m.content === 'string'
  ? [m.content] : m.content.filter((b) => b.type === 'text' && !/^<system-reminder>/.test(b.text)).map((b) => b.text))).join('\n');
// The main-loop requests the API got whose newest user text holds word.
const asked = (word) => api.requests.filter((r) => r.main && JSON.stringify(r.body.messages?.at(-1) ?? '').includes(word));
const finished = (r) => r.status !== 'running' && r.status !== 'starting' && r.status !== 'awaiting_decision' && !r.permission_request;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

test('claude through agentd: turns, a permission, a queued message, stop and resume with its history; no process left', async () => {
  const file = join(fx.sb.ws, 'hello.txt');
  api = await startAnthropicApi([
    { contains: 'TURN-ONE', text: 'one done' },
    { contains: 'TURN-TWO', text: 'two done' },
    { contains: 'WRITE-FILE', tool: 'Write', input: { file_path: file, content: 'hello from claude\n' } },
    { afterTool: 'Write', text: 'wrote it' },
    { contains: 'SLOW-TURN', text: 'slow answer that streams for a while', chunk: 4, delayMs: 300 },
    { contains: 'QUEUED-NOTE', text: 'queued done' },
    { contains: 'AFTER-RESUME', text: 'after resume' },
  ]);
  const env = fx.env({
    REASONIX_MCP_AGENT_CLAUDE: AGENT, ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: 'scripted-key', CLAUDE_CONFIG_DIR: join(fx.sb.home, '.claude'),
    ANTHROPIC_MODEL: MODEL, DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  });
  const { client } = await fx.connect({ name: 'agent-claude', env });
  const watch = async (sid) => (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];

  const s = await tool(client, 'reasonix_spawn', { task: 'TURN-ONE go', agent: 'claude', tool_approval: 'ask', cwd: fx.sb.ws });
  const sid = s.session_id;
  assert.equal(s.tool_approval, 'ask', JSON.stringify(s));
  const one = await watch(sid);
  assert.equal(one.status, 'idle', JSON.stringify(one));
  assert.match(one.message, /one done/);

  await tool(client, 'reasonix_send', { session_id: sid, message: 'TURN-TWO go' });
  const two = await watch(sid);
  assert.match(two.message, /two done/);

  // ask: Claude Code's Write asks, the watch wakes with the request, the allow option lets it run
  await tool(client, 'reasonix_send', { session_id: sid, message: 'WRITE-FILE go' });
  const w = await watch(sid);
  const pr = w.permission_request;
  assert.ok(pr, `the watch wakes with the permission request: ${JSON.stringify(w)}`);
  assert.equal(pr.kind, 'permission');
  const allow = pr.options.find((o) => o.kind === 'allow_once');
  assert.ok(allow, JSON.stringify(pr.options));
  assert.equal(pr.tool_call.rawInput?.file_path, file, JSON.stringify(pr.tool_call));
  const answered = await tool(client, 'reasonix_respond_permission', { session_id: sid, option_id: allow.optionId, request_id: pr.request_id });
  assert.equal(answered.answered, true);
  const wrote = (await watchUntil(client, [sid], finished))[sid];
  assert.match(wrote.message, /wrote it/);
  assert.equal(readFileSync(file, 'utf8'), 'hello from claude\n', 'the write landed in the session\'s cwd');

  // steer = "queue": a message during a slow turn waits for its end, then starts the next turn
  await tool(client, 'reasonix_send', { session_id: sid, message: 'SLOW-TURN go' });
  await until(() => asked('SLOW-TURN').length > 0, 30000, 'the slow turn reached the API');
  const q = await tool(client, 'reasonix_send', { session_id: sid, message: 'QUEUED-NOTE go' });
  assert.equal(q.delivered, 'queued', JSON.stringify(q));
  const queued = (await watchUntil(client, [sid], (r) => finished(r) && /queued done/.test(r.message ?? '')))[sid];
  assert.equal(queued.stop_reason, 'end_turn');
  assert.match(JSON.stringify(asked('QUEUED-NOTE').at(-1).body.messages), /slow answer that streams for a while[\s\S]*QUEUED-NOTE go/,
    'the queued message is the next turn\'s, after the slow one\'s answer');

  await tool(client, 'reasonix_stop', { session_id: sid });
  await until(() => sandboxProcesses(fx.sb).filter((p) => /claude/.test(p.cmd)).length === 0, 15000, 'the agent is gone after stop');
  await tool(client, 'reasonix_resume', { session_id: sid });
  await tool(client, 'reasonix_send', { session_id: sid, message: 'AFTER-RESUME go' });
  const back = (await watchUntil(client, [sid], (r) => finished(r) && /after resume/.test(r.message ?? '')))[sid];
  assert.equal(back.stop_reason, 'end_turn');
  const history = userTexts(asked('AFTER-RESUME').at(-1).body);
  assert.match(history, /TURN-ONE go[\s\S]*TURN-TWO go[\s\S]*WRITE-FILE go[\s\S]*SLOW-TURN go[\s\S]*QUEUED-NOTE go[\s\S]*AFTER-RESUME go/,
    'the resumed session\'s request carries every earlier turn');
  assert.match(JSON.stringify(asked('AFTER-RESUME').at(-1).body.messages), /one done[\s\S]*wrote it[\s\S]*queued done/, 'and their answers');

  await tool(client, 'reasonix_stop', { session_id: sid });
  await until(() => sandboxProcesses(fx.sb).filter((p) => /claude/.test(p.cmd)).length === 0, 15000, 'no process of the agent left');
});

test('spawn → first turn end: through agentd against the agent driven directly (medians of 3)', async () => {
  const env = fx.env({
    REASONIX_MCP_AGENT_CLAUDE: AGENT, ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: 'scripted-key', CLAUDE_CONFIG_DIR: join(fx.sb.home, '.claude'),
    ANTHROPIC_MODEL: MODEL, DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
  });
  const { client } = await fx.connect({ name: 'agent-claude-time', env });
  const viaAgentd = [];
  for (let i = 0; i < 3; i++) {
    const t0 = Date.now();
    const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'TURN-ONE go', agent: 'claude', cwd: fx.sb.ws });
    const r = (await watchUntil(client, [sid], finished))[sid];
    viaAgentd.push(Date.now() - t0);
    assert.match(r.message, /one done/);
    await tool(client, 'reasonix_stop', { session_id: sid });
  }
  // directly: one config dir, warmed by a first run not counted (agentd's was warmed by the test above)
  const direct = [];
  const home = mkdtempSync(join(tmpdir(), 'agent-claude-'));
  try {
    for (let i = 0; i < 4; i++) {
      const t0 = Date.now();
      const agent = startAgent({ ...agentEnv(api.url, home, MODEL), RMCP_E2E_RUN: RUN_ID }, home);
      try {
        await agent.request('initialize', { protocolVersion: 1, clientCapabilities: {} });
        const { sessionId } = await agent.request('session/new', { cwd: home, mcpServers: [] });
        await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-ONE go' }] });
        if (i > 0) direct.push(Date.now() - t0);
      } finally {
        await agent.close();
      }
    }
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
  const [a, b] = [median(viaAgentd), median(direct)];
  console.log(`# claude spawn -> first turn end: through agentd ${viaAgentd.join(', ')} ms (median ${a}), directly ${direct.join(', ')} ms (median ${b}), ratio ${(a / b).toFixed(2)}`);
  await until(() => sandboxProcesses(fx.sb).filter((p) => /claude/.test(p.cmd)).length === 0, 15000, 'no process of the agent left');
});
