// The built-in agent "claude" (Claude Code's ACP agent, pinned, against the scripted Anthropic
// Messages API) driven through agentd by the MCP tools as reasonix is (issue 37), by the flow of
// agent_flow.mjs: spawn with tool_approval "ask" → watch → a second turn → a write that asks
// permission, allowed through reasonix_respond_permission, lands in the session's cwd → configure
// (model, yolo; effort skipped) reaches Claude Code and the API, and a second write asks nobody → a message
// sent during a slow turn is queued and starts the next turn → stop → resume → a turn whose API
// request carries every earlier turn → stop leaves no process. Prints spawn → first turn end through
// agentd against the agent driven directly (initialize, session/new, first prompt), medians of 3, and their ratio.
// needs: agent python3 clients acp-agent
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAnthropicApi } from './anthropic_api.mjs';
import { AGENT, agentEnv, startAgent } from './claude_acp_usage.mjs';
import { useFixture, until, RUN_ID } from './helpers.mjs';
import { agentFlow, compareFirstTurn } from './agent_flow.mjs';

const MODEL = 'claude-sonnet-4-5';
const fx = useFixture({});
let api;
after(() => api?.stop());

// The user texts of an Anthropic Messages request body (reminders and tool results left out).
const userTexts = (body) => (body.messages || []).filter((m) => m.role === 'user').flatMap((m) => (typeof m.content === 'string'
  ? [m.content] : m.content.filter((b) => b.type === 'text' && !/^<system-reminder>/.test(b.text)).map((b) => b.text))).join('\n');
// The main-loop requests the API got whose newest user text holds word (for a model it does not
// know, Claude Code adds a trailing system message).
const asked = (word) => api.requests.filter((r) => r.main
  && JSON.stringify((r.body.messages ?? []).filter((m) => m.role !== 'system').at(-1) ?? '').includes(word));
// agentd's env for Claude Code against the scripted API.
const env = () => fx.env({
  REASONIX_MCP_AGENT_CLAUDE: AGENT, ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: 'scripted-key', CLAUDE_CONFIG_DIR: join(fx.sb.home, '.claude'),
  ANTHROPIC_MODEL: MODEL, DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
});

test('claude through agentd: turns, a permission, a queued message, stop and resume with its history; no process left', async () => {
  const file = join(fx.sb.ws, 'hello.txt');
  const again = join(fx.sb.ws, 'again.txt');
  api = await startAnthropicApi([
    { contains: 'TURN-ONE', text: 'one done' },
    { contains: 'TURN-TWO', text: 'two done' },
    { contains: 'WRITE-FILE', tool: 'Write', input: { file_path: file, content: 'hello from claude\n' } },
    { contains: 'WRITE-AGAIN', tool: 'Write', input: { file_path: again, content: 'again from claude\n' } },
    { afterTool: 'Write', text: 'wrote it' },
    { contains: 'SLOW-TURN', text: 'slow answer that streams for a while', chunk: 4, delayMs: 300 },
    { contains: 'QUEUED-NOTE', text: 'queued done' },
    { contains: 'AFTER-RESUME', text: 'after resume' },
  ]);
  await agentFlow(fx, {
    agent: 'claude', client: 'agent-claude', env: env(), spawn: { cwd: fx.sb.ws }, once: true,
    say: { one: 'TURN-ONE go', two: 'TURN-TWO go', write: 'WRITE-FILE go', slow: 'SLOW-TURN go', queued: 'QUEUED-NOTE go', resume: 'AFTER-RESUME go' },
    answers: { one: /one done/, two: /two done/, wrote: /wrote it/, queued: /queued done/, resume: /after resume/ },
    target: file, content: 'hello from claude\n',
    asked: (pr) => assert.equal(pr.tool_call.rawInput?.file_path, file, JSON.stringify(pr.tool_call)),
    // configure: the model through Claude Code's config option, its mode through session/set_mode
    // (no bypassPermissions here: acceptEdits, and agentd answers what it still asks); no effort option
    configure: {
      set: { model: 'haiku', effort: 'high', tool_approval: 'yolo' }, say: 'WRITE-AGAIN go', answer: /wrote it/,
      target: again, content: 'again from claude\n',
      applied: { model: 'haiku', tool_approval: 'yolo' }, skipped: ['effort'],
      agentConfig: { model: 'haiku', mode: 'acceptEdits' },
      reached: () => assert.match(asked('WRITE-AGAIN')[0].body.model, /haiku/, 'the new model reached the API'),
    },
    slowReached: () => until(() => asked('SLOW-TURN').length > 0, 30000, 'the slow turn reached the API'),
    queued: () => assert.match(JSON.stringify(asked('QUEUED-NOTE').at(-1).body.messages), /slow answer that streams for a while[\s\S]*QUEUED-NOTE go/,
      'the queued message is the next turn\'s, after the slow one\'s answer'),
    history: () => {
      const history = userTexts(asked('AFTER-RESUME').at(-1).body);
      assert.match(history, /TURN-ONE go[\s\S]*TURN-TWO go[\s\S]*WRITE-FILE go[\s\S]*SLOW-TURN go[\s\S]*QUEUED-NOTE go[\s\S]*AFTER-RESUME go/,
        'the resumed session\'s request carries every earlier turn');
      assert.match(JSON.stringify(asked('AFTER-RESUME').at(-1).body.messages), /one done[\s\S]*wrote it[\s\S]*queued done/, 'and their answers');
    },
  });
});

test('spawn → first turn end: through agentd against the agent driven directly (medians of 3)', async () => {
  // directly: one config dir (agentd's was warmed by the test above)
  await compareFirstTurn(fx, {
    agent: 'claude', client: 'agent-claude-time', env: env(), answer: /one done/,
    init: { protocolVersion: 1, clientCapabilities: {} },
    home: () => {
      const home = mkdtempSync(join(tmpdir(), 'agent-claude-'));
      return { cwd: home, start: () => startAgent({ ...agentEnv(api.url, home, MODEL), RMCP_E2E_RUN: RUN_ID }, home), remove: () => rmSync(home, { recursive: true, force: true }) };
    },
  });
});
