// The built-in agent "codex" (Codex's ACP agent, pinned, against the scripted OpenAI Responses API)
// driven through agentd by the MCP tools as reasonix is (issue 37): spawn with tool_approval "ask"
// (mode read-only) → watch → a second turn → an apply_patch that asks permission, allowed through
// reasonix_respond_permission, lands in the session's cwd → a message sent during a slow turn is
// queued and starts the next turn → stop → resume → a turn whose API request carries every earlier
// turn → stop leaves no process. Prints spawn → first turn end through agentd against the agent
// driven directly (initialize, session/new, first prompt), medians of 3, and their ratio.
// needs: agent python3 clients codex-acp
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startResponsesApi } from './openai_responses_api.mjs';
import { AGENT, makeHome, startAgent, INIT } from './codex_acp.mjs';
import { useFixture, tool, until, watchUntil, sandboxProcesses, RUN_ID } from './helpers.mjs';

const fx = useFixture({});
const api = await startResponsesApi([
  { contains: 'TURN-ONE', text: 'one done' },
  { contains: 'TURN-TWO', text: 'two done' },
  { contains: 'WRITE-FILE', tool: 'apply_patch', input: '*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n' },
  { afterTool: 'apply_patch', text: 'wrote it' },
  { contains: 'SLOW-TURN', text: 'slow answer that streams for a while', chunk: 4, delayMs: 300 },
  { contains: 'QUEUED-NOTE', text: 'queued done' },
  { contains: 'AFTER-RESUME', text: 'after resume' },
]);
after(() => api.stop());
const cx = makeHome(api.url, 'agent-codex-');
after(() => cx.remove());

// The main requests the API got whose newest user text holds word.
const asked = (word) => api.requests.filter((r) => r.main && r.last?.text?.includes(word));
const finished = (r) => r.status !== 'running' && r.status !== 'starting' && r.status !== 'awaiting_decision' && !r.permission_request;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const env = () => fx.env({ REASONIX_MCP_AGENT_CODEX: AGENT, CODEX_HOME: cx.codexHome, SCRIPTED_API_KEY: 'scripted-key' });
const gone = () => until(() => sandboxProcesses(fx.sb).filter((p) => /codex/.test(p.cmd)).length === 0, 15000, 'no process of the agent left');

test('codex through agentd: turns, a permission, a queued message, stop and resume with its history; no process left', async () => {
  const { client } = await fx.connect({ name: 'agent-codex', env: env() });
  const watch = async (sid) => (await tool(client, 'reasonix_watch', { session_ids: [sid] })).results[sid];

  // (effort: Codex offers it as its config option reasoning_effort, category thought_level)
  const s = await tool(client, 'reasonix_spawn', { task: 'TURN-ONE go', agent: 'codex', tool_approval: 'ask', effort: 'low', cwd: fx.sb.ws });
  const sid = s.session_id;
  assert.equal(s.tool_approval, 'ask', JSON.stringify(s));
  assert.deepEqual([s.agent_config?.mode, s.effort], ['read-only', 'low'], JSON.stringify(s));
  assert.ok(!(s.warnings ?? []).some((w) => /effort/.test(w)), JSON.stringify(s.warnings));
  const one = await watch(sid);
  assert.equal(one.status, 'idle', JSON.stringify(one));
  assert.match(one.message, /one done/);
  assert.equal(asked('TURN-ONE')[0].body.reasoning?.effort, 'low', 'the effort reached the API');

  await tool(client, 'reasonix_send', { session_id: sid, message: 'TURN-TWO go' });
  const two = await watch(sid);
  assert.match(two.message, /two done/);

  // ask (read-only): apply_patch asks, the watch wakes with the request, the allow option lets it run
  await tool(client, 'reasonix_send', { session_id: sid, message: 'WRITE-FILE go' });
  const w = await watch(sid);
  const pr = w.permission_request;
  assert.ok(pr, `the watch wakes with the permission request: ${JSON.stringify(w)}`);
  assert.equal(pr.kind, 'permission');
  assert.equal(pr.tool_call.kind, 'edit', JSON.stringify(pr.tool_call));
  const allow = pr.options.find((o) => o.kind === 'allow_once');
  assert.ok(allow, JSON.stringify(pr.options));
  const answered = await tool(client, 'reasonix_respond_permission', { session_id: sid, option_id: allow.optionId, request_id: pr.request_id });
  assert.equal(answered.answered, true);
  const wrote = (await watchUntil(client, [sid], finished))[sid];
  assert.match(wrote.message, /wrote it/);
  assert.equal(readFileSync(join(fx.sb.ws, 'hello.txt'), 'utf8'), 'hello from codex\n', 'the write landed in the session\'s cwd');
  assert.deepEqual(api.errors, []);

  // steer = "queue": a message during a slow turn waits for its end, then starts the next turn
  await tool(client, 'reasonix_send', { session_id: sid, message: 'SLOW-TURN go' });
  await until(() => asked('SLOW-TURN').length > 0, 30000, 'the slow turn reached the API');
  const q = await tool(client, 'reasonix_send', { session_id: sid, message: 'QUEUED-NOTE go' });
  assert.equal(q.delivered, 'queued', JSON.stringify(q));
  const queued = (await watchUntil(client, [sid], (r) => finished(r) && /queued done/.test(r.message ?? '')))[sid];
  assert.equal(queued.stop_reason, 'end_turn');
  assert.equal(asked('QUEUED-NOTE').length, 1, 'the queued message was sent once, as its own turn');
  assert.match(JSON.stringify(asked('QUEUED-NOTE')[0].body.input), /SLOW-TURN go[\s\S]*slow answer that streams for a while[\s\S]*QUEUED-NOTE go/,
    'the queued message is the next turn\'s, after the slow one\'s answer');

  await tool(client, 'reasonix_stop', { session_id: sid });
  await gone();
  await tool(client, 'reasonix_resume', { session_id: sid });
  await tool(client, 'reasonix_send', { session_id: sid, message: 'AFTER-RESUME go' });
  const back = (await watchUntil(client, [sid], (r) => finished(r) && /after resume/.test(r.message ?? '')))[sid];
  assert.equal(back.stop_reason, 'end_turn');
  assert.match(JSON.stringify(asked('AFTER-RESUME').at(-1).body.input),
    /TURN-ONE go[\s\S]*one done[\s\S]*TURN-TWO go[\s\S]*WRITE-FILE go[\s\S]*hello from codex[\s\S]*wrote it[\s\S]*SLOW-TURN go[\s\S]*QUEUED-NOTE go[\s\S]*queued done[\s\S]*AFTER-RESUME go/,
    'the resumed session\'s request carries every earlier turn');

  await tool(client, 'reasonix_stop', { session_id: sid });
  await gone();
});

test('spawn → first turn end: through agentd against the agent driven directly (medians of 3)', async () => {
  const { client } = await fx.connect({ name: 'agent-codex-time', env: env() });
  const viaAgentd = [];
  for (let i = 0; i < 3; i++) {
    const t0 = Date.now();
    const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'TURN-ONE go', agent: 'codex', cwd: fx.sb.ws });
    const r = (await watchUntil(client, [sid], finished))[sid];
    viaAgentd.push(Date.now() - t0);
    assert.match(r.message, /one done/);
    await tool(client, 'reasonix_stop', { session_id: sid });
  }
  // directly: one CODEX_HOME, warmed by a first run not counted (agentd's was warmed by the test above)
  const direct = [];
  const h = makeHome(api.url, 'agent-codex-time-');
  try {
    for (let i = 0; i < 4; i++) {
      const t0 = Date.now();
      const agent = startAgent({ ...h.env, RMCP_E2E_RUN: RUN_ID }, h.ws);
      try {
        await agent.request('initialize', INIT);
        const { sessionId } = await agent.request('session/new', { cwd: h.ws, mcpServers: [] });
        await agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'TURN-ONE go' }] });
        if (i > 0) direct.push(Date.now() - t0);
      } finally {
        await agent.close(0);
      }
    }
  } finally {
    h.remove();
  }
  const [a, b] = [median(viaAgentd), median(direct)];
  console.log(`# codex spawn -> first turn end: through agentd ${viaAgentd.join(', ')} ms (median ${a}), directly ${direct.join(', ')} ms (median ${b}), ratio ${(a / b).toFixed(2)}`);
  await gone();
});
