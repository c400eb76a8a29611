// The model API Claude Code talks to in fresh_machine.sh (tests/hosts/scripted_api.mjs on 127.0.0.1):
// its model spawns one agent, watches it to its turn's end and answers with what the watch said.
// Prints {"port": N} when ready; exits on SIGTERM, 0 only if the script ran to its end
// without an error and the agent's turn ended with end_turn.
import { startScriptedApi } from '../hosts/scripted_api.mjs';

const api = await startScriptedApi();
let sid, verdict = 'the script did not reach its end';
// Parses a tool result's text (structured JSON or a text block holding it).
const parse = (prev) => JSON.parse(/\{[\s\S]*\}/.exec(prev.text)[0]);
api.script([
  () => ({ call: 'reasonix_spawn', args: { task: 'QUICK-TASK say hello from the fresh machine', model: 'mock/mock-model' } }),
  (prev) => { sid = parse(prev).session_id; return { call: 'reasonix_watch', args: { session_ids: [sid] } }; },
  (prev) => {
    const r = parse(prev).results[sid];
    verdict = r.stop_reason === 'end_turn' ? null : `the turn ended with ${r.stop_reason}: ${prev.text}`;
    return { say: `FLEET-DONE agent ${sid} ended its turn (${r.stop_reason}): ${r.message}` };
  },
]);
console.log(JSON.stringify({ port: api.port }));
process.on('SIGTERM', async () => {
  await api.close();
  for (const e of api.errors) console.error(`fresh_machine_api: ${e.stack ?? e}`);
  if (verdict) console.error(`fresh_machine_api: ${verdict}`);
  process.exit(api.errors.length || verdict ? 1 : 0);
});
