// The cases every host runs (claude.test.mjs, codex.test.mjs): the scripted model calls the tools
// through the host, reads the results the host hands back and decides the next call; each case
// asserts on those results, the host's final answer and agentd's state.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { useHost, parseResult, withTimeout } from './hosts.mjs';
import { BIN } from '../e2e/helpers.mjs';

const question = {
  header: 'Library', question: 'Which library?', multiSelect: false,
  options: [{ label: 'alpha', description: 'first' }, { label: 'beta', description: 'second' }],
};
const scenario = {
  rules: [
    { name: 'quick', last_role: 'user', user_contains: 'QUICK-TASK', text: 'loop reply' },
    { name: 'write', last_role: 'user', user_contains: 'WRITE-TASK', tool_calls: [{ name: 'write_file', arguments: { path: 'perm.txt', content: 'PERM\n' } }] },
    { name: 'after-write', last_tool_name: 'write_file', text: 'wrote it' },
    { name: 'ask', last_role: 'user', user_contains: 'ASK-TASK', tool_calls: [{ name: 'ask', arguments: { questions: [question] } }] },
    { name: 'after-ask', last_tool_name: 'ask', echo: 'tool_result', text: 'ANSWER: ' },
    { name: 'flood', last_role: 'user', user_contains: 'FLOOD-TASK', text: 'flood-line '.repeat(20000), chunk: 2000 },
    { name: 'slow', last_role: 'user', user_contains: 'SLOW-TASK', text: 'slow-part-'.repeat(40) + 'SLOW-END', chunk: 10, delay: 0.15 },
  ],
};

const MODEL = 'mock/mock-model';

// The session of a spawn result.
const sidOf = (prev) => parseResult(prev).session_id;

// Runs the host with prompt (opts: fx.run's) and waits for it; fails with its output when it did
// not exit 0.
async function runHost(fx, prompt, opts) {
  const r = await fx.run(prompt, opts).result;
  assert.deepEqual(fx.api.errors.map(String), [], 'the script ran as written');
  assert.equal(r.code, 0, `host exit ${r.code}/${r.signal}\nstdout: ${r.stdout}\nstderr: ${r.stderr.slice(-3000)}`);
  return r;
}

// agentd's view of session sid, as a user sees it: `reasonix-mcp ctl --json list` for the session's
// orchestrator (the host's, derived from its client name and workspace; read from the session file).
function ctlSession(fx, sid) {
  const file = JSON.parse(readFileSync(join(fx.sb.mcp, 'sessions', `${sid}.json`), 'utf8'));
  return fx.ctlList(file.owner).sessions.find((x) => x.session_id === sid);
}

// Registers the cases for host on test (node:test's).
export function hostSuite(host, test) {
  const fx = useHost(host, scenario);

  test(`${host}: spawn → watch → poll → list → stop, registered as the README says`, async (t) => {
    // `reasonix-mcp setup HOST` registered this binary through the host's own command, then ran doctor
    const bin = BIN.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assert.match(fx.setupOutput, host === 'claude'
      ? new RegExp(`run: claude mcp add-json reasonix --scope user '.*"command":"${bin}".*"alwaysLoad":true}'\n`)
      : new RegExp(`run: codex mcp add reasonix .*-- ${bin}\n`));
    if (host === 'claude') {
      // loaded before the first turn: `claude -p` sends its first model request only once our tools are listed
      const reg = JSON.parse(readFileSync(join(fx.env.CLAUDE_CONFIG_DIR, '.claude.json'), 'utf8')).mcpServers.reasonix;
      assert.equal(reg.alwaysLoad, true, JSON.stringify(reg));
    }
    assert.match(fx.setupOutput, /reasonix-mcp doctor:\n\[ok  \] agent binary/);
    let sid;
    fx.api.script([
      () => ({ call: 'reasonix_spawn', args: { task: 'QUICK-TASK say hello', model: MODEL } }),
      (prev) => { sid = sidOf(prev); assert.match(sid, /^rx-/); return { call: 'reasonix_watch', args: { session_ids: [sid] } }; },
      (prev) => {
        const r = parseResult(prev).results[sid];
        assert.equal(r.stop_reason, 'end_turn', prev.text);
        assert.match(r.message, /loop reply/);
        return { call: 'reasonix_poll', args: { session_id: sid } };
      },
      (prev) => { assert.equal(parseResult(prev).status, 'idle', prev.text); return { call: 'reasonix_list', args: {} }; },
      (prev) => {
        assert.ok(parseResult(prev).sessions.some((x) => x.session_id === sid), prev.text);
        return { call: 'reasonix_stop', args: { session_id: sid } };
      },
      (prev) => ({ say: `LOOP-DONE ${parseResult(prev).status}` }),
    ]);
    const r = await runHost(fx, 'Run the reasonix loop.');
    assert.match(r.stdout, /LOOP-DONE exited/);
    assert.equal(fx.api.results.length, 5);
    assert.ok(fx.api.results.every((x) => !x.isError), JSON.stringify(fx.api.results));
    assert.equal(ctlSession(fx, sid).status, 'exited', 'agentd has the session stopped');
    // routine lifecycle (a deliberate stop) is below the default log level: the host prints nothing
    assert.doesNotMatch(r.stdout + r.stderr, /MCP server log message|notifications\/message/);
    if (host === 'codex') {
      // progress does not extend Codex's tool timeout: the README's registration sets one a watch fits in
      const reg = fx.hostJson(['mcp', 'get', 'reasonix', '--json']);
      assert.equal(reg.transport.command, BIN);
      assert.ok(reg.tool_timeout_sec >= 3600, `tool_timeout_sec ${reg.tool_timeout_sec}`);
      assert.match(readFileSync(join(fx.env.CODEX_HOME, 'config.toml'), 'utf8'), /^default_tools_approval_mode = "approve"$/m);
    }
    t.diagnostic(`${host}: tool definitions as sent to the model: ${JSON.stringify(fx.api.toolsBytes())}; run ${r.ms} ms`);
  });

  test(`${host}: a detailed poll of a 220 KB flood reaches the model whole, bounded and flagged`, async (t) => {
    let sid, got;
    fx.api.script([
      () => ({ call: 'reasonix_spawn', args: { task: 'FLOOD-TASK write a lot', model: MODEL } }),
      (prev) => { sid = sidOf(prev); return { call: 'reasonix_watch', args: { session_ids: [sid] } }; },
      () => ({ call: 'reasonix_poll', args: { session_id: sid, detail: true, include_full: true, include_events: ['agent_message_chunk'] } }),
      (prev) => { got = prev; return { call: 'reasonix_stop', args: { session_id: sid } }; },
      () => ({ say: 'FLOOD-DONE' }),
    ]);
    const r = await runHost(fx, 'Poll a chatty agent in detail.');
    assert.match(r.stdout, /FLOOD-DONE/);
    const p = parseResult(got);
    assert.ok(p, `the host passed the whole JSON on: ${got.text.slice(-200)}`);
    assert.equal(p.result_truncated, true);
    assert.ok(JSON.stringify(p).length <= 45000, `bounded: ${JSON.stringify(p).length} bytes`);
    assert.doesNotMatch(got.text, /<persisted-output>|<truncated-output>/, 'the host did not cut or move it');
    assert.ok(p.full_text_truncated || p.text_truncated, 'the cut is flagged');
    t.diagnostic(`${host}: detailed poll as the model got it: ${got.text.length} bytes`);
  });

  test(`${host}: a permission request is answered through the host and the gated write runs`, async () => {
    let sid, pr;
    fx.api.script([
      () => ({ call: 'reasonix_spawn', args: { task: 'WRITE-TASK create perm.txt', tool_approval: 'ask', model: MODEL } }),
      (prev) => { sid = sidOf(prev); return { call: 'reasonix_watch', args: { session_ids: [sid] } }; },
      (prev) => {
        pr = parseResult(prev).results[sid].permission_request;
        assert.equal(pr?.kind, 'permission', prev.text);
        assert.equal(pr.tool_call.rawInput.path, 'perm.txt');
        return { call: 'reasonix_respond_permission', args: { session_id: sid, option_id: 'allow_once', request_id: pr.request_id } };
      },
      (prev) => { assert.equal(parseResult(prev).answered, true, prev.text); return { call: 'reasonix_watch', args: { session_ids: [sid] } }; },
      (prev) => ({ say: `PERM-DONE ${parseResult(prev).results[sid].stop_reason}` }),
    ]);
    assert.equal(existsSync(join(fx.sb.ws, 'perm.txt')), false);
    const r = await runHost(fx, 'Create perm.txt through a reasonix agent.');
    assert.match(r.stdout, /PERM-DONE end_turn/);
    assert.equal(readFileSync(join(fx.sb.ws, 'perm.txt'), 'utf8'), 'PERM\n');
  });

  test(`${host}: a question answered wrongly first is returned by the next watch at once, then answered`, async () => {
    let sid, first;
    fx.api.script([
      () => ({ call: 'reasonix_spawn', args: { task: 'ASK-TASK pick a library', model: MODEL } }),
      (prev) => { sid = sidOf(prev); return { call: 'reasonix_watch', args: { session_ids: [sid] } }; },
      (prev) => {
        first = parseResult(prev).results[sid].permission_request;
        assert.equal(first?.kind, 'question', prev.text);
        return { call: 'reasonix_respond_permission', args: { session_id: sid, option_id: 'beta' } }; // a label, not an id
      },
      (prev) => {
        assert.match(prev.text, /"beta" is not an option .*q1:2/, 'the wrong answer is refused with the ids');
        // a watch that did not return the decision at once would time out here
        return { call: 'reasonix_watch', args: { session_ids: [sid], timeout: 20 } };
      },
      (prev) => {
        const again = parseResult(prev);
        assert.equal(again.timed_out, undefined, prev.text);
        assert.equal(again.results[sid].permission_request.request_id, first.request_id);
        assert.equal(again.results[sid].decision_repeated, true);
        return { call: 'reasonix_respond_permission', args: { session_id: sid, option_id: 'q1:2' } };
      },
      () => ({ call: 'reasonix_watch', args: { session_ids: [sid] } }),
      (prev) => ({ say: `ASK-DONE ${parseResult(prev).results[sid].message}` }),
    ]);
    const r = await runHost(fx, 'Ask a reasonix agent which library to use.');
    assert.match(r.stdout, /ASK-DONE ANSWER: .*beta/s);
  });

  test(`${host}: the host killed mid-watch; a new host session finds the session and gets its result`, async () => {
    let sid;
    fx.api.script([
      () => ({ call: 'reasonix_spawn', args: { task: 'SLOW-TASK take your time', model: MODEL } }),
      (prev) => { sid = sidOf(prev); return { call: 'reasonix_watch', args: { session_ids: [sid] } }; },
      () => ({ say: 'WATCH-RETURNED-TOO-EARLY' }),
    ]);
    const run = fx.run('Start a slow reasonix agent and watch it.');
    await withTimeout(fx.api.waitStep(1), 60000, 'the host asked for the watch');
    assert.equal(ctlSession(fx, sid).status, 'running', 'killed while the turn runs');
    run.kill();
    const dead = await run.result;
    assert.ok(dead.signal === 'SIGKILL' || dead.code !== 0, 'the host was killed');
    assert.equal(fx.api.actions.length, 2, 'the watch never returned to the killed host');

    fx.api.script([
      () => ({ call: 'reasonix_list', args: {} }),
      (prev) => {
        assert.ok(parseResult(prev).sessions.some((x) => x.session_id === sid), `the new host session lists ${sid}: ${prev.text}`);
        return { call: 'reasonix_watch', args: { session_ids: [sid] } };
      },
      (prev) => {
        const res = parseResult(prev).results[sid];
        assert.equal(res.stop_reason, 'end_turn', prev.text);
        return { say: `RESUMED ${res.message.slice(-8)}` };
      },
    ]);
    // Codex scopes sessions per conversation: the user comes back to the same one
    const r = await runHost(fx, 'Find your reasonix sessions and wait for them.', host === 'codex' ? { resume: 'last' } : undefined);
    assert.match(r.stdout, /RESUMED SLOW-END/);
  });

  test(`${host}: every capability is offered from the first start: the routine and worktree tools with no setting`, async () => {
    fx.api.script([
      () => ({ call: 'reasonix_routine', args: { action: 'templates' } }),
      (prev) => ({ say: `SURFACE-DONE ${parseResult(prev).templates.length}` }),
    ]);
    const r = await runHost(fx, 'List the routine templates.');
    assert.match(r.stdout, /SURFACE-DONE 6/);
    const sent = fx.api.toolsBytes();
    assert.equal(sent.tools, 17, `the host offers every tool: ${JSON.stringify(sent)}`);
    assert.ok(sent.bytes <= 8192, `the tool definitions as the host sends them: ${JSON.stringify(sent)}`);
  });

  if (host === 'codex') {
    test('codex: two conversations in one project see only their own sessions; a resumed one sees its own again', async () => {
      let sid;
      fx.api.script([
        () => ({ call: 'reasonix_spawn', args: { task: 'QUICK-TASK conversation one', model: MODEL } }),
        (prev) => { sid = sidOf(prev); return { call: 'reasonix_watch', args: { session_ids: [sid] } }; },
        () => ({ say: 'ONE-DONE' }),
      ]);
      const one = await runHost(fx, 'Start an agent.');
      const thread = /session id:\s*([0-9a-f-]{36})/i.exec(one.stdout + one.stderr)?.[1];
      assert.ok(thread, `codex names its conversation: ${one.stderr.slice(0, 400)}`);
      fx.api.script([
        () => ({ call: 'reasonix_list', args: {} }),
        (prev) => ({ say: parseResult(prev).sessions.some((x) => x.session_id === sid) ? 'TWO-SEES-IT' : 'TWO-ISOLATED' }),
      ]);
      assert.match((await runHost(fx, 'List your agents.')).stdout, /TWO-ISOLATED/, 'another conversation does not see it');
      fx.api.script([
        () => ({ call: 'reasonix_list', args: {} }),
        (prev) => ({ say: parseResult(prev).sessions.some((x) => x.session_id === sid) ? 'ONE-AGAIN' : 'ONE-LOST' }),
      ]);
      assert.match((await runHost(fx, 'List your agents.', { resume: thread })).stdout, /ONE-AGAIN/, 'the resumed conversation does');
    });
  }

  // Last: it takes the registration away.
  test(`${host}: setup again changes nothing; setup --remove leaves the host's config as it was before setup`, () => {
    const registered = fx.hostConfig();
    assert.match(fx.setup([host]), /already registered: runs /);
    assert.equal(fx.hostConfig(), registered, 'a second setup changes nothing');
    fx.setup(['--remove', host]);
    assert.equal(fx.hostConfig(), fx.configBefore, 'as it was before setup');
    assert.match(fx.setup(['--remove', host]), /setup registered nothing here: nothing to undo/);
  });
}
