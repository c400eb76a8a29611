// The fleet dashboard in a real browser (Debian's chromium, headless, driven by playwright-core)
// with the real agent: log in (a wrong password refused first), watch an agent stream, steer it and
// see the steer in its timeline (its reasoning collapsed), answer a question and a permission
// request from the page, stop and resume; a host's watch still gets the streamed turn's result; a
// routine's run is found, its gate answered and the routine paused from the loop-agents section; what
// each agent spends, each orchestrator and the day (its chart) equals agentd's list and the ledger. Screenshots of each view are
// saved under build/test-output/dashboard/.
// needs: agent python3 clients browser
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { useFixture, tool, BIN, alive, until } from './helpers.mjs';

const question = { header: 'Library', question: 'Which library?', multiSelect: false,
  options: [{ label: 'alpha', description: 'first' }, { label: 'beta', description: 'second' }] };
const scenario = {
  rules: [
    { name: 'stream', last_role: 'user', user_contains: 'STREAM-TASK', text: 'streaming line '.repeat(80) + 'STREAM-END', chunk: 12, delay: 0.05 },
    { name: 'steered', last_role: 'user', user_contains: 'PAGE-STEER', reasoning: 'weighing the steer first', text: 'the steer landed' },
    { name: 'ask', last_role: 'user', user_contains: 'ASK-TASK', tool_calls: [{ name: 'ask', arguments: { questions: [question] } }] },
    { name: 'after-ask', last_tool_name: 'ask', echo: 'tool_result', text: 'ANSWER: ' },
    { name: 'write', last_role: 'user', user_contains: 'WRITE-TASK', tool_calls: [{ name: 'write_file', arguments: { path: 'page.txt', content: 'PAGE\n' } }] },
    { name: 'after-write', last_tool_name: 'write_file', text: 'wrote page.txt' },
  ],
  default: { text: 'default reply' },
};
const PORT = 25000 + (process.pid % 4000);
const URL0 = `http://127.0.0.1:${PORT}`;
const SHOTS = join(dirname(BIN), 'test-output', 'dashboard');
let browser, page, client, dashboardPid;
// Closes the browser and stops the dashboard (before the fixture's teardown looks for leftovers).
async function closeAll() {
  await browser?.close();
  browser = null;
  if (dashboardPid && alive(dashboardPid)) {
    process.kill(dashboardPid, 'SIGTERM');
    await until(() => !alive(dashboardPid), 5000, 'the dashboard stops');
  }
}
const fx = useFixture({ scenario }, async () => {
  mkdirSync(SHOTS, { recursive: true });
  ({ client } = await fx.connect({ name: 'browser-host', env: fx.env({ REASONIX_MCP_DASHBOARD_PORT: String(PORT) }) }));
  const d = await tool(client, 'reasonix_dashboard', {});
  dashboardPid = d.pid;
  const { chromium } = await import('playwright-core');
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.password = readFileSync(d.password, 'utf8').trim();
});
after(closeAll); // when a case failed early (the last case closes them otherwise)

const shot = (name) => page.screenshot({ path: join(SHOTS, `${name}.png`) });
const act = (sid) => page.locator(`.agent[data-id="${sid}"]`);

test('log in: a wrong password is refused, the right one opens the fleet', async () => {
  await page.goto(URL0 + '/');
  assert.match(page.url(), /\/login$/);
  await page.fill('#password', 'not-it');
  await page.click('button[type=submit]');
  await page.locator('#error').waitFor();
  assert.match(await page.locator('#error').textContent(), /Wrong password/);
  await shot('login-refused');
  await page.fill('#password', page.password);
  await page.click('button[type=submit]');
  await page.waitForURL(URL0 + '/');
  await page.locator('#conn', { hasText: 'live' }).waitFor();
});

test('an agent streams live; a steer lands in its timeline; the host still gets the result', async () => {
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'STREAM-TASK write slowly', keep_alive: true });
  await act(sid).waitFor();
  const t0 = Date.now();
  await act(sid).click();
  await page.locator('#live', { hasText: 'streaming line' }).waitFor();
  console.log(`# streamed text on the page ${Date.now() - t0} ms after selecting the agent`);
  assert.equal(new URL(page.url()).hash, '#' + sid, 'the selection is in the fragment');
  await shot('streaming');
  const watching = tool(client, 'reasonix_watch', { session_ids: [sid] });
  await page.fill('#msg', 'PAGE-STEER from the browser');
  await page.click('#send');
  await page.locator('.ev.steer, .ev.prompt', { hasText: 'PAGE-STEER' }).waitFor();
  const w = await watching;
  assert.equal(w.results[sid].stop_reason, 'end_turn', 'the host\'s watch got the turn the page looked at');
  const ended = page.locator('.ev.turn', { hasText: 'the steer landed' });
  await ended.waitFor();
  const reasoning = ended.locator('details.thought');
  assert.equal(await reasoning.getAttribute('open'), null, 'the reasoning is there, collapsed');
  await reasoning.locator('summary').click();
  await reasoning.locator('pre', { hasText: 'weighing the steer first' }).waitFor();
  await shot('steered');
  await page.reload();
  await page.locator('.agent.sel').waitFor();
  assert.equal(await page.locator('.agent.sel').getAttribute('data-id'), sid, 'a reload comes back to the agent');
  await tool(client, 'reasonix_stop', { session_id: sid });
});

test('a question and a permission request are answered from the page', async () => {
  const { session_id: q } = await tool(client, 'reasonix_spawn', { task: 'ASK-TASK pick one' });
  await act(q).click();
  const card = page.locator('.decision');
  await card.waitFor();
  await shot('question');
  await card.locator('button', { hasText: 'beta' }).click();
  await page.locator('.ev.turn', { hasText: 'ANSWER' }).waitFor();
  const { session_id: p } = await tool(client, 'reasonix_spawn', { task: 'WRITE-TASK write page.txt', tool_approval: 'ask' });
  await act(p).click();
  await page.locator('.decision', { hasText: 'write_file' }).waitFor();
  await shot('permission');
  await page.locator('.decision button[data-opt="allow_once"]').click();
  await page.locator('.ev.turn', { hasText: 'wrote page.txt' }).waitFor();
  assert.ok(existsSync(join(fx.sb.ws, 'page.txt')), 'the allowed write ran');
});

test('loop agents: a routine\'s run is seen, its gate answered and the routine paused from the page', async () => {
  const r = await tool(client, 'reasonix_routine_create', { name: 'page routine', prompt: 'WRITE-TASK from a routine', tool_approval: 'ask' });
  await page.goto(URL0 + '/');
  const row = page.locator(`.routine[data-rid="${r.routine_id}"]`);
  await row.waitFor();
  await row.locator('button[data-ract="run"]').click();
  await row.locator('.note', { hasText: 'waits for an answer' }).waitFor();
  await shot('routine-waiting');
  await row.locator('a').click(); // the run's session, with its timeline and the decision
  const card = page.locator('.decision');
  await card.waitFor();
  assert.match(await page.locator('#head').textContent(), /routine:/, 'the run belongs to the routine\'s owner');
  await card.locator('button[data-opt="allow_once"]').click();
  await page.locator('.ev.turn', { hasText: 'wrote page.txt' }).waitFor();
  await row.locator('.note', { hasText: /last: .* done/ }).waitFor();
  await row.locator('button[data-ract="pause"]').click();
  await row.locator('.note', { hasText: 'paused' }).waitFor();
  assert.equal((await tool(client, 'reasonix_routine_list', {})).routines[0].enabled, false, 'paused for its creator too');
  await shot('routine-paused');
  await tool(client, 'reasonix_routine_delete', { routine_id: r.routine_id });
});

test('what each agent spends: the page shows agentd\'s figures, per agent, per orchestrator, today, and the chart the ledger\'s', async () => {
  const l = await tool(client, 'reasonix_list', { all: true });
  assert.ok(l.usage.tokens > 0, 'the agents above spent something');
  await page.goto(URL0 + '/');
  await page.locator('#spend svg').first().waitFor();
  const figure = async (loc) => ({ tokens: Number(await loc.getAttribute('data-tokens')), text: await loc.textContent() });
  for (const row of l.sessions) {
    const shown = await figure(act(row.session_id).locator('.use[data-k="agent"]'));
    assert.equal(shown.tokens, row.usage.tokens, `${row.session_id}: the tokens agentd lists`);
    assert.ok(shown.text.startsWith(row.usage.tokens.toLocaleString('en-US') + ' tokens'), shown.text);
    assert.match(shown.text, row.usage.cost == null ? /cost unknown/ : new RegExp(row.usage.cost.toFixed(4)), 'no price: unknown, never 0');
  }
  const group = page.locator('details.orch', { has: act(l.sessions[0].session_id) }).locator('summary');
  assert.equal((await figure(group.locator('.use[data-k="total"]'))).tokens, l.usage.tokens, 'the orchestrator\'s total');
  assert.equal((await figure(group.locator('.use[data-k="today"]'))).tokens, l.usage.today.tokens, 'and its spend today (its routine\'s runs in it)');
  // the chart: today's hours and the last days sum to what the ledger holds (ctl usage reads the files)
  const ledger = JSON.parse(execFileSync(BIN, ['ctl', '--json', 'usage', '--by', 'hour'], { env: fx.env(), encoding: 'utf8' }));
  const hours = page.locator('#chart-hours'), days = page.locator('#chart-days');
  assert.equal(Number(await hours.getAttribute('data-sum')), ledger.total.total, 'the hourly chart is the day\'s ledger');
  assert.equal(await hours.locator('rect').count(), 24);
  for (const r of ledger.rows) {
    assert.equal(Number(await hours.locator(`rect[data-key="${r.hour}"]`).getAttribute('data-tokens')), r.total, r.hour);
  }
  assert.equal(Number(await days.locator('rect').last().getAttribute('data-tokens')), ledger.total.total, 'today\'s bar');
  assert.equal((await figure(page.locator('#spend .use[data-k="today"]'))).tokens, ledger.total.total, 'spent today, over every orchestrator');
  let every = 0;
  for (const row of await page.locator('.agent .use[data-k="agent"]').all()) every += Number(await row.getAttribute('data-tokens'));
  assert.equal(every, ledger.total.total, 'every agent on the page together spent what the ledger holds');
  await act(l.sessions[0].session_id).click();
  assert.equal((await figure(page.locator('#spent .use'))).tokens, l.sessions[0].usage.tokens, 'the agent\'s own page');
  await shot('spend');
});

test('stop and resume from the page', async () => {
  const { session_id: sid } = await tool(client, 'reasonix_spawn', { task: 'default task', keep_alive: true });
  await tool(client, 'reasonix_watch', { session_ids: [sid] });
  await act(sid).click();
  await page.locator('#stop').click();
  await page.locator(`.agent[data-id="${sid}"] .s-exited`).waitFor();
  await shot('stopped');
  await page.locator('#resume').click();
  await page.locator(`.agent[data-id="${sid}"] .s-idle`).waitFor();
  await tool(client, 'reasonix_stop', { session_id: sid });
  await page.setViewportSize({ width: 560, height: 900 });
  await shot('narrow');
  await closeAll();
});
