// Mixed fleets (issue 37): each agent of one reasonix_spawn names its own `agent` — reasonix, Claude
// Code's ACP agent (`claude`), Codex's (`codex`), Gemini CLI (`gemini`) and opencode (`opencode`),
// each real, from npm, pinned, each pointed at a scripted model API on 127.0.0.1 (the mock Chat
// provider for reasonix and opencode, the scripted Anthropic Messages API for Claude Code, the
// scripted Responses API for Codex, the scripted Gemini API for Gemini CLI) — and one
// reasonix_watch drives them all: every result has
// the same shape (status, message, usage), a second turn each, list rows say each one's agent, stop
// leaves no process. Prints spawn -> first turn end per agent.
// needs: agent python3 clients acp-agent codex-acp gemini opencode
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { startAnthropicApi } from './anthropic_api.mjs';
import { AGENT as CLAUDE } from './claude_acp_usage.mjs';
import { AGENT as OPENCODE, makeHome } from './opencode_acp.mjs';
import { AGENT as CODEX, makeHome as codexHome } from './codex_acp.mjs';
import { startResponsesApi } from './openai_responses_api.mjs';
import { AGENT as GEMINI, makeHome as geminiHome, agentEnv as geminiEnv } from './gemini_acp.mjs';
import { startGeminiApi } from './gemini_api.mjs';
import { useFixture, tool, until, sandboxProcesses } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'title', any_contains: 'Generate a title', text: 'Title here' },
    { name: 'one', last_role: 'user', user_contains: 'MIXED-ONE', text: 'one done' },
    { name: 'two', last_role: 'user', user_contains: 'MIXED-TWO', text: 'two done' },
  ],
  default: { text: 'ok' },
};
const api = await startAnthropicApi([{ contains: 'MIXED-ONE', text: 'one done' }, { contains: 'MIXED-TWO', text: 'two done' }]);
after(() => api.stop());
const responses = await startResponsesApi([{ contains: 'MIXED-ONE', text: 'one done' }, { contains: 'MIXED-TWO', text: 'two done' }]);
after(() => responses.stop());
const gapi = await startGeminiApi([{ contains: 'MIXED-ONE', text: 'one done' }, { contains: 'MIXED-TWO', text: 'two done' }]);
after(() => gapi.stop());
const fx = useFixture({ scenario });

test('one fleet of four agents, each its own kind, driven by one watch; two turns each; stop leaves none', async () => {
  const oc = makeHome(`http://127.0.0.1:${fx.provider.port}`);
  after(() => oc.cleanup());
  const cx = codexHome(responses.url);
  after(() => cx.remove());
  const gHome = join(oc.root, 'gemini');
  geminiHome(gHome);
  const g = geminiEnv(gapi.url, gHome);
  const env = fx.env({
    REASONIX_MCP_AGENT_CLAUDE: CLAUDE, ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: 'scripted-key',
    CLAUDE_CONFIG_DIR: join(fx.sb.home, '.claude'), ANTHROPIC_MODEL: 'claude-sonnet-4-5',
    DISABLE_AUTOUPDATER: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    REASONIX_MCP_AGENT_OPENCODE: OPENCODE,
    REASONIX_MCP_AGENT_CODEX: CODEX, CODEX_HOME: cx.codexHome, SCRIPTED_API_KEY: 'scripted-key',
    REASONIX_MCP_AGENT_GEMINI: GEMINI, GEMINI_CLI_HOME: g.GEMINI_CLI_HOME, GEMINI_API_KEY: g.GEMINI_API_KEY,
    GOOGLE_GEMINI_BASE_URL: g.GOOGLE_GEMINI_BASE_URL, GEMINI_CLI_NO_RELAUNCH: 'true',
    ...Object.fromEntries(Object.entries(oc.env).filter(([k]) => k.startsWith('XDG_') || k.startsWith('OPENCODE_') || k === 'MOCK_API_KEY')),
  });
  const { client } = await fx.connect({ name: 'mixed-host', env });
  const kinds = ['reasonix', 'claude', 'codex', 'gemini', 'opencode'];
  const t0 = Date.now();
  // Codex offers its model only as a config option: an explicit one is set through it
  const f = await tool(client, 'reasonix_spawn', { agents: kinds.map((k) => ({ name: k, task: `MIXED-ONE for ${k}`, agent: k,
    ...(k === 'codex' ? { model: 'gpt-5.4-mini' } : {}) })) });
  assert.equal(f.spawned, kinds.length, JSON.stringify(f.results));
  const ids = Object.fromEntries(f.results.map((r) => [r.name, r.session_id]));
  const firstEnd = {};
  // one watch over the whole fleet until every first turn is in
  const left = new Set(Object.values(ids));
  const got = {};
  while (left.size) {
    const w = await tool(client, 'reasonix_watch', { session_ids: [...left] });
    for (const [id, r] of Object.entries(w.results)) {
      if (r.status === 'idle') { got[id] = r; left.delete(id); firstEnd[id] = Date.now() - t0; }
      else assert.notEqual(r.status, 'exited', `${id}: ${JSON.stringify(r)}`);
    }
  }
  for (const k of kinds) {
    const r = got[ids[k]];
    assert.match(r.message, /one done/, `${k}: its answer`);
    assert.equal(r.stop_reason, 'end_turn', k);
    if (k === 'codex') { // (it reports only its context size, never what it spent: estimated, nothing invented)
      assert.deepEqual([r.usage.total, r.usage.estimated], [0, true], `${k}: ${JSON.stringify(r.usage)}`);
    } else {
      assert.ok(r.usage && r.usage.total > 0 && !r.usage.estimated, `${k}: usage counted: ${JSON.stringify(r.usage)}`);
    }
    console.log(`# ${k}: spawn -> first turn end ${firstEnd[ids[k]]} ms (in a fleet of ${kinds.length})`);
  }
  assert.equal(responses.requests.filter((r) => r.path.endsWith('/responses')).at(-1).body.model, 'gpt-5.4-mini',
    'the model set through its config option reached the API');
  assert.deepEqual((await tool(client, 'reasonix_models', { agent: 'codex' })).models.map((m) => m.ref).includes('gpt-5.4-mini'), true,
    'reasonix_models(agent) lists its config option\'s models');
  const rows = Object.fromEntries((await tool(client, 'reasonix_list', {})).sessions.map((r) => [r.session_id, r]));
  assert.deepEqual(kinds.map((k) => rows[ids[k]].agent ?? 'reasonix'), kinds, 'each row says its agent');
  for (const k of kinds) await tool(client, 'reasonix_send', { session_id: ids[k], message: `MIXED-TWO for ${k}` });
  const second = new Set(Object.values(ids));
  while (second.size) {
    const w = await tool(client, 'reasonix_watch', { session_ids: [...second] });
    for (const [id, r] of Object.entries(w.results)) {
      if (r.status === 'idle' && /two done/.test(r.message)) second.delete(id);
    }
  }
  for (const k of kinds) await tool(client, 'reasonix_stop', { session_id: ids[k] });
  await until(() => sandboxProcesses(fx.sb).filter((p) => /claude|codex|gemini|opencode/.test(p.cmd)).length === 0, 15000, 'every agent gone after stop');
});
