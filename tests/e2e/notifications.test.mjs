// Diagnostic event frames on the raw wire (the SDK may drop custom notifications): every agent
// event reaches the host as `reasonix/agent_event` plus `notifications/message`, with transcript
// path and error text, each relay is logged, and logging/setLevel filters only the standard one.
// needs: agent python3 clients
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useFixture, rawServer, strictEnvelope } from './helpers.mjs';

const scenario = {
  rules: [
    { name: 'ok', last_role: 'user', user_contains: 'HELLO-TASK', text: 'hello back' },
    { name: 'bad', last_role: 'user', user_contains: 'FAIL-TASK', status: 400, error: 'mock bad request for FAIL-TASK' },
    { name: 'ask', last_role: 'user', user_contains: 'ASK-TASK', tool_calls: [{ name: 'ask', arguments: { questions: [
      { header: 'Color', question: 'Which color?', multiSelect: false, options: [{ label: 'red' }, { label: 'blue' }] }] } }] },
    { name: 'after-ask', last_tool_name: 'ask', echo: 'tool_result', text: 'ANSWER: ' },
  ],
};

const fx = useFixture({ scenario });

// Calls a tool on the raw wire and returns its structuredContent (failing on isError).
async function call(srv, name, args) {
  const r = await srv.request('tools/call', { name, arguments: args });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.notEqual(r.result.isError, true, r.result.content?.[0]?.text);
  return r.result.structuredContent;
}

const isEvent = (sid, event) => (m) => m.method === 'reasonix/agent_event' && m.params.session_id === sid && m.params.event === event;

test('turn_end, error and exit events arrive as reasonix/agent_event + notifications/message', async () => {
  const srv = rawServer(fx.sb);
  await srv.initialize();
  assert.deepEqual((await srv.request('logging/setLevel', { level: 'info' })).result, {}, 'routine events are info, sent on request');
  const ok = await call(srv, 'reasonix_spawn', { task: 'HELLO-TASK say hello' });
  const end = await srv.next(isEvent(ok.session_id, 'turn_end'), 60000, 'turn_end frame');
  assert.equal(end.params.status, 'idle');
  assert.equal(end.params.stop_reason, 'end_turn');
  assert.match(end.params.transcript_path, /\S/);
  const msg = await srv.next((m) => m.method === 'notifications/message' && m.params.data?.event?.session_id === ok.session_id
    && m.params.data.event.event === 'turn_end');
  assert.equal(msg.params.logger, 'reasonix');
  assert.equal(msg.params.level, 'info');
  assert.match(msg.params.data.text, /turn_end/);

  const bad = await call(srv, 'reasonix_spawn', { task: 'FAIL-TASK this will fail' });
  const failed = await srv.next((m) => m.method === 'reasonix/agent_event' && m.params.session_id === bad.session_id
    && m.params.error_text, 60000, 'error frame');
  assert.match(failed.params.error_text, /mock bad request|400/);
  const errMsg = await srv.next((m) => m.method === 'notifications/message' && m.params.data?.event?.session_id === bad.session_id
    && m.params.level === 'error');
  assert.match(errMsg.params.data.text, /error/);

  // Below the client's level the standard message is withheld; the diagnostic frame is not.
  assert.deepEqual((await srv.request('logging/setLevel', { level: 'error' })).result, {});
  const before = srv.frames.length;
  await call(srv, 'reasonix_stop', { session_id: ok.session_id });
  const exited = await srv.next((m, i) => m.method === 'reasonix/agent_event' && m.params.session_id === ok.session_id
    && m.params.event === 'process_exited', 30000, 'process_exited frame');
  assert.equal(exited.params.status, 'exited');
  await call(srv, 'reasonix_list', {});
  const later = srv.frames.slice(before);
  assert.ok(!later.some((m) => m.method === 'notifications/message' && m.params.level === 'info'), 'info messages withheld at level error');

  await srv.close();
  for (const f of srv.frames) assert.equal(strictEnvelope(f), null, JSON.stringify(f));
  assert.deepEqual(srv.badLines, []);
  const log = srv.stderr.join('');
  assert.match(log, /relay agent_event session=\S+ event=turn_end .*-> reasonix\/agent_event sent/);
  assert.match(log, /below client log level/);
  console.log(`# ${srv.frames.filter((m) => m.method === 'reasonix/agent_event').length} agent_event frames, e.g. ${JSON.stringify(end)}`);
});

test('2025-06-18 client: elicitation/create uses enum + enumNames, and is withdrawn once answered elsewhere', async () => {
  const srv = rawServer(fx.sb);
  const init = await srv.initialize({ protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 'legacy-elicit', version: '1' } });
  assert.equal(init.result.protocolVersion, '2025-06-18');
  const { session_id: sid } = await call(srv, 'reasonix_spawn', { task: 'ASK-TASK choose a color' });
  const form = await srv.next((m) => m.method === 'elicitation/create', 60000, 'elicitation/create request');
  assert.equal(form.params.mode, undefined, 'no mode field before 2025-11-25');
  assert.match(form.params.message, /Which color\?/);
  const field = form.params.requestedSchema.properties.option;
  assert.deepEqual(field.enum, ['q1:1', 'q1:2', 'q1:cancel']);
  assert.deepEqual(field.enumNames, ['red', 'blue', 'Cancel']);
  // Nobody answers the form; the orchestrator answers through the tool instead.
  await call(srv, 'reasonix_respond_permission', { session_id: sid, option_id: 'q1:2' });
  const end = await srv.next(isEvent(sid, 'turn_end'), 60000, 'turn_end after the answer');
  assert.equal(end.params.stop_reason, 'end_turn');
  const withdrawn = await srv.next((m) => m.method === 'notifications/cancelled' && m.params.requestId === form.id, 10000, 'form withdrawn');
  assert.match(withdrawn.params.reason, /turn ended/);
  // A late answer to the withdrawn form is ignored without harm.
  srv.send({ jsonrpc: '2.0', id: form.id, result: { action: 'accept', content: { option: 'q1:1' } } });
  assert.deepEqual((await srv.request('ping')).result, {});
  await call(srv, 'reasonix_stop', { session_id: sid });
  await srv.close();
  for (const f of srv.frames) assert.equal(strictEnvelope(f), null, JSON.stringify(f));
});
