// The built-in agent "codex" (Codex's ACP agent, pinned, against the scripted OpenAI Responses API)
// driven through agentd by the MCP tools as reasonix is (issue 37), by the flow of agent_flow.mjs:
// spawn with tool_approval "ask" (mode read-only) → watch → a second turn → an apply_patch that asks
// permission, allowed through reasonix_respond_permission, lands in the session's cwd → configure
// (model, effort, yolo) reaches Codex and the API, and a second patch asks nobody → a message
// sent during a slow turn is queued and starts the next turn → stop → resume → a turn whose API
// request carries every earlier turn → stop leaves no process. Prints spawn → first turn end through
// agentd against the agent driven directly (initialize, session/new, first prompt), medians of 3, and their ratio.
// needs: agent python3 clients codex-acp
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startResponsesApi } from './openai_responses_api.mjs';
import { AGENT, makeHome, startAgent, INIT } from './codex_acp.mjs';
import { useFixture, until, RUN_ID } from './helpers.mjs';
import { agentFlow, compareFirstTurn } from './agent_flow.mjs';

const fx = useFixture({});
const api = await startResponsesApi([
  { contains: 'TURN-ONE', text: 'one done' },
  { contains: 'TURN-TWO', text: 'two done' },
  { contains: 'WRITE-FILE', tool: 'apply_patch', input: '*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n' },
  { contains: 'WRITE-AGAIN', tool: 'apply_patch', input: '*** Begin Patch\n*** Add File: again.txt\n+again from codex\n*** End Patch\n' },
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
// agentd's env for Codex against the scripted API.
const env = () => fx.env({ REASONIX_MCP_AGENT_CODEX: AGENT, CODEX_HOME: cx.codexHome, SCRIPTED_API_KEY: 'scripted-key' });

test('codex through agentd: turns, a permission, a queued message, stop and resume with its history; no process left', async () => {
  await agentFlow(fx, {
    // (effort: Codex offers it as its config option reasoning_effort, category thought_level)
    agent: 'codex', client: 'agent-codex', env: env(), spawn: { effort: 'low', cwd: fx.sb.ws }, once: true,
    say: { one: 'TURN-ONE go', two: 'TURN-TWO go', write: 'WRITE-FILE go', slow: 'SLOW-TURN go', queued: 'QUEUED-NOTE go', resume: 'AFTER-RESUME go' },
    answers: { one: /one done/, two: /two done/, wrote: /wrote it/, queued: /queued done/, resume: /after resume/ },
    target: join(fx.sb.ws, 'hello.txt'), content: 'hello from codex\n',
    spawned: (s) => {
      assert.deepEqual([s.agent_config?.mode, s.effort], ['read-only', 'low'], JSON.stringify(s));
      assert.ok(!(s.warnings ?? []).some((w) => /effort/.test(w)), JSON.stringify(s.warnings));
    },
    first: () => assert.equal(asked('TURN-ONE')[0].body.reasoning?.effort, 'low', 'the effort reached the API'),
    // ask (read-only): apply_patch asks
    asked: (pr) => assert.equal(pr.tool_call.kind, 'edit', JSON.stringify(pr.tool_call)),
    wrote: () => assert.deepEqual(api.errors, []),
    // configure: the mode through session/set_mode, model and effort through Codex's own config options
    configure: {
      set: { model: 'gpt-5.4-mini', effort: 'high', tool_approval: 'yolo' }, say: 'WRITE-AGAIN go', answer: /wrote it/,
      target: join(fx.sb.ws, 'again.txt'), content: 'again from codex\n',
      applied: { model: 'gpt-5.4-mini', effort: 'high', tool_approval: 'yolo' }, skipped: [],
      agentConfig: { mode: 'full-access', model: 'gpt-5.4-mini', reasoning_effort: 'high' },
      reached: () => {
        const b = asked('WRITE-AGAIN')[0].body;
        assert.deepEqual([b.model, b.reasoning?.effort], ['gpt-5.4-mini', 'high'], 'the new model and effort reached the API');
      },
    },
    slowReached: () => until(() => asked('SLOW-TURN').length > 0, 30000, 'the slow turn reached the API'),
    queued: () => {
      assert.equal(asked('QUEUED-NOTE').length, 1, 'the queued message was sent once, as its own turn');
      assert.match(JSON.stringify(asked('QUEUED-NOTE')[0].body.input), /SLOW-TURN go[\s\S]*slow answer that streams for a while[\s\S]*QUEUED-NOTE go/,
        'the queued message is the next turn\'s, after the slow one\'s answer');
    },
    history: () => assert.match(JSON.stringify(asked('AFTER-RESUME').at(-1).body.input),
      /TURN-ONE go[\s\S]*one done[\s\S]*TURN-TWO go[\s\S]*WRITE-FILE go[\s\S]*hello from codex[\s\S]*wrote it[\s\S]*SLOW-TURN go[\s\S]*QUEUED-NOTE go[\s\S]*queued done[\s\S]*AFTER-RESUME go/,
      'the resumed session\'s request carries every earlier turn'),
  });
});

test('spawn → first turn end: through agentd against the agent driven directly (medians of 3)', async () => {
  // directly: one CODEX_HOME (agentd's was warmed by the test above)
  await compareFirstTurn(fx, {
    agent: 'codex', client: 'agent-codex-time', env: env(), answer: /one done/, init: INIT, close: (a) => a.close(0),
    home: () => {
      const h = makeHome(api.url, 'agent-codex-time-');
      return { cwd: h.ws, start: () => startAgent({ ...h.env, RMCP_E2E_RUN: RUN_ID }, h.ws), remove: () => h.remove() };
    },
  });
});
