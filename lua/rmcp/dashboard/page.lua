-- The dashboard's pages: the login form and the fleet page (one HTML document with its style and
-- script inline, no build step, no third-party code; the spend chart is inline SVG). The page reads
-- /api/fleet, /api/usage and /api/session, listens to /api/events and acts through /api/act; the selected agent lives in the
-- URL fragment so a reload comes back to it.
local M = {}

local STYLE = [[
:root{color-scheme:dark;--bg:#0d1117;--panel:#161b22;--line:#30363d;--text:#e6edf3;--dim:#8b949e;--accent:#58a6ff;
--ok:#3fb950;--warn:#d29922;--bad:#f85149;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--text);font:14px/1.45 system-ui,sans-serif}
button,select,input,textarea{font:inherit;color:var(--text);background:#0d1117;border:1px solid var(--line);border-radius:6px;padding:5px 9px}
button{cursor:pointer;background:#21262d}button:hover{border-color:var(--accent)}button.primary{background:#1f6feb;border-color:#1f6feb}
button.danger{color:var(--bad)}
]]

-- The login page (why: nil, "wrong" or "throttled").
function M.login(why)
  local msg = ""
  if why == "wrong" then msg = '<p class="err" id="error">Wrong password.</p>' end
  if why == "throttled" then msg = '<p class="err" id="error">Too many attempts: wait a minute and try again.</p>' end
  return [[<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>reasonix fleet — log in</title><style>]] .. STYLE .. [[
main{max-width:340px;margin:14vh auto;padding:28px;background:var(--panel);border:1px solid var(--line);border-radius:10px}
h1{font-size:18px;margin:0 0 16px}input{width:100%;margin:8px 0 14px}.err{color:var(--bad)}p.hint{color:var(--dim);font-size:12px}
</style></head><body><main><h1>reasonix fleet</h1>]] .. msg .. [[
<form method="post" action="/login"><label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" autofocus required>
<button class="primary" type="submit">Log in</button></form>
<p class="hint">The password is REASONIX_MCP_DASHBOARD_PASSWORD, or the one in dashboard.password in the runtime dir.</p>
</main></body></html>]]
end

local MAIN_STYLE = [[
header{display:flex;align-items:center;gap:12px;padding:8px 14px;border-bottom:1px solid var(--line);background:var(--panel)}
header h1{font-size:15px;margin:0}header .sp{flex:1}#conn{font-size:12px;color:var(--dim)}
#app{display:grid;grid-template-columns:minmax(240px,320px) 1fr;height:calc(100vh - 45px)}
#app>nav{border-right:1px solid var(--line);overflow:auto}#detail{overflow:auto;padding:14px 18px}
details.orch>summary{padding:8px 12px;cursor:pointer;color:var(--dim);font-size:12px;border-bottom:1px solid var(--line);list-style:none}
.agent{display:block;width:100%;text-align:left;border:0;border-bottom:1px solid var(--line);border-radius:0;background:none;padding:8px 12px}
.agent.sel{background:#1c2330;box-shadow:inset 3px 0 var(--accent)}.agent .t{display:block;color:var(--dim);font-size:12px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.badge{display:inline-block;font-size:11px;padding:1px 7px;border-radius:10px;border:1px solid var(--line);margin-right:6px}
.s-running,.s-starting{color:var(--ok);border-color:var(--ok)}.s-awaiting_decision{color:var(--warn);border-color:var(--warn)}
.s-exited,.s-orphaned{color:var(--dim)}.h-stalled,.h-blocked{color:var(--warn);border-color:var(--warn)}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(180px,1fr));gap:6px 16px;color:var(--dim);font-size:12px;margin:8px 0 12px}
.grid b{color:var(--text);font-weight:500}.card{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:8px 0}
.tl{border-left:2px solid var(--line);margin:10px 0 0 4px;padding-left:12px}.ev{margin:0 0 10px}.ev .k{font-size:11px;color:var(--dim)}
.ev pre,.live{white-space:pre-wrap;word-break:break-word;font:12px/1.5 var(--mono);margin:4px 0 0;background:#0b0f14;border:1px solid var(--line);border-radius:6px;padding:8px}
.ev.steer .k,.ev.prompt .k{color:var(--accent)}.ev.tool .k{color:#d2a8ff}.ev.turn .k{color:var(--ok)}.ev.err .k{color:var(--bad)}
.actions{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:10px 0}textarea{width:100%;min-height:64px}
.use{display:block;font-size:11px;color:var(--dim)}summary .use{display:inline;margin-left:4px}#spend{padding:8px 12px;border-bottom:1px solid var(--line);font-size:12px;color:var(--dim)}
#spend svg{display:block;width:100%;height:46px;margin:4px 0 2px}#spend rect{fill:var(--accent)}#spend rect.now{fill:var(--ok)}#spend .axis{display:flex;justify-content:space-between;font-size:10px}
.decision{border-color:var(--warn)}details.thought>summary{cursor:pointer;color:var(--dim);font-size:12px}.routine{padding:8px 12px;border-bottom:1px solid var(--line)}.routine .actions{margin-top:6px}.routine button{font-size:12px;padding:3px 8px}.note{color:var(--dim);font-size:12px}.empty{color:var(--dim);padding:30px}
@media (max-width:760px){#app{grid-template-columns:1fr;height:auto}#app>nav{max-height:40vh;border-right:0;border-bottom:1px solid var(--line)}}
]]

local SCRIPT = [[
const $ = (s, e = document) => e.querySelector(s);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
let fleet = null, routines = null, usage = null, selected = location.hash.slice(1) || null, current = null, timeline = [], offset = 0;
const collapsed = new Set(); // the orchestrators a person folded, kept across redraws
async function api(path, body) {
  const r = await fetch(path, body ? {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)} : {});
  if (r.status === 401) { location.href = '/login'; throw new Error('log in'); }
  const data = await r.json();
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}
function badge(s) { return `<span class="badge s-${esc(s.status)}">${esc(s.status)}</span>` +
  (s.health && s.health.state !== 'running' ? `<span class="badge h-${esc(s.health.state)}">${esc(s.health.state)}</span>` : ''); }
const when = (t) => t ? new Date(t * 1000).toLocaleString() : '—';
// What a figure spent, in words: exact tokens; a cost never known says so, never 0.
const tokens = (n) => Number(n || 0).toLocaleString('en-US');
function costText(u) {
  const part = u.cost_partial ? ' (partial)' : '';
  if (u.cost != null) return u.cost.toFixed(4) + ' ' + (u.currency || '') + part;
  if (u.costs) return Object.entries(u.costs).map(([c, v]) => v.toFixed(4) + ' ' + c).join(' + ') + part;
  return (u.tokens ?? u.total) ? 'cost unknown' : '';
}
// A figure (a list row's {tokens, cost?…} or a ledger sum's {total, cost?…}) as a span tests can read.
function spent(u, kind, label) {
  if (!u) return '';
  const cost = costText(u), n = u.tokens ?? u.total;
  return `<span class="use" data-k="${kind}" data-tokens="${n}" data-cost="${u.cost ?? ''}">${label || ''}${tokens(n)} tokens${u.estimated ? ' (estimated)' : ''}${cost ? ' · ' + esc(cost) : ''}</span>`;
}
// A bar chart (inline SVG) of rows' total tokens, one bar a row, labelled by key; its sum in data-sum.
function chart(rows, key, name, nowKey) {
  const max = Math.max(1, ...rows.map((r) => r.total)), w = 100 / rows.length;
  const bars = rows.map((r, i) => { const h = r.total ? Math.max(1, 40 * r.total / max) : 0;
    return `<rect class="${r[key] === nowKey ? 'now' : ''}" data-key="${esc(r[key])}" data-tokens="${r.total}" x="${(i * w + w * 0.1).toFixed(2)}" y="${(42 - h).toFixed(2)}" width="${(w * 0.8).toFixed(2)}" height="${h.toFixed(2)}"><title>${esc(r[key])}: ${tokens(r.total)} tokens${costText(r) ? ' · ' + esc(costText(r)) : ''}</title></rect>`; }).join('');
  const sum = rows.reduce((a, r) => a + r.total, 0);
  return `<svg id="chart-${name}" data-sum="${sum}" viewBox="0 0 100 42" preserveAspectRatio="none" role="img" aria-label="${name}: ${tokens(sum)} tokens">${bars}</svg>`;
}
function renderSpend() {
  const el = $('#spend');
  if (!usage) { el.hidden = true; return; }
  el.hidden = false;
  const hour = usage.today + ' ' + String(new Date().getHours()).padStart(2, '0') + ':00';
  const days = usage.days.length;
  el.innerHTML = `<div>spent today ${spent(usage.total, 'today')}</div>` +
    chart(usage.hours, 'hour', 'hours', hour) + '<div class="axis"><span>00:00</span><span>today by hour</span><span>23:00</span></div>' +
    chart(usage.days, 'day', 'days', usage.today) + `<div class="axis"><span>${esc(usage.days[0].day.slice(5))}</span><span>the last ${days} days</span><span>today</span></div>`;
}
function renderRoutines() {
  if (!routines || routines.routines.length === 0) return '';
  const rows = routines.routines.map((r) => {
    const last = r.runs[0], at = r.current_run && r.runs.find((x) => x.run_id === r.current_run);
    const state = at ? at.status : r.enabled ? (r.next_due ? 'next ' + when(r.next_due) : 'manual') : 'paused';
    const b = (a, label, cls) => `<button class="${cls || ''}" data-ract="${a}" data-rid="${esc(r.routine_id)}">${label}</button>`;
    return `<div class="routine" data-rid="${esc(r.routine_id)}"><b>${esc(r.name)}</b> <span class="note">${esc(r.schedule)} · ${esc(state)}${r.queued ? ' · ' + r.queued + ' queued' : ''}</span>` +
      (last ? `<div class="note">last: ${last.session_id ? `<a href="#${esc(last.session_id)}">${esc(last.run_id)}</a>` : esc(last.run_id)} ${esc(last.status)}${last.permission_request ? ' — waits for an answer' : ''}</div>` : '') +
      `<div class="actions">${b('run', 'Run now', 'primary')}${r.enabled ? b('pause', 'Pause') : b('enable', 'Enable')}${at ? b('stop', 'Stop run', 'danger') : ''}</div></div>`;
  }).join('');
  return `<details class="orch" data-o="__routines"${collapsed.has('__routines') ? '' : ' open'}><summary>loop agents · ${routines.routines.length} routine(s) · ${routines.active_runs} at work</summary>${rows}</details>`;
}
// The label of an orchestrator group: a routine's runs are named after their routine.
function groupName(id) {
  const m = /^routine:(.+)$/.exec(id), r = m && routines && routines.routines.find((x) => x.routine_id === m[1]);
  return r ? `routine “${esc(r.name)}” (${esc(m[1])})` : esc(id);
}
function renderFleet() {
  const el = $('#fleet');
  if ((!fleet || fleet.orchestrators.length === 0) && !renderRoutines()) { el.innerHTML = '<p class="empty">No agents yet.</p>'; return; }
  el.innerHTML = renderRoutines() + (fleet ? fleet.orchestrators : []).map((o) => `<details class="orch" data-o="${esc(o.id)}"${collapsed.has(o.id) ? '' : ' open'}><summary>${groupName(o.id)} · ${o.sessions.length} agent(s)${o.active ? ' · ' + o.active + ' active' : ''}` +
    (o.usage ? `${spent(o.usage, 'total', '· ')}${spent(o.usage.today, 'today', '· today ')}` : '') + '</summary>' +
    o.sessions.map((s) => `<button class="agent${s.session_id === selected ? ' sel' : ''}" data-id="${esc(s.session_id)}">${badge(s)}<b>${esc(s.session_id)}</b>` +
      `<span class="t">${esc(s.current_work ? (s.current_work.title || s.current_work.content) : s.task)}</span>${spent(s.usage, 'agent')}</button>`).join('') + '</details>').join('');
  for (const b of el.querySelectorAll('.agent')) b.onclick = () => select(b.dataset.id);
  for (const b of el.querySelectorAll('button[data-ract]')) b.onclick = async () => {
    b.disabled = true;
    try { await api('/api/routine_act', {routine_id: b.dataset.rid, action: b.dataset.ract}); } catch (e) { alert(b.dataset.ract + ' failed: ' + e.message); }
    fleetSoon(true);
  };
  for (const g of el.querySelectorAll('details.orch')) g.ontoggle = () => { if (g.open) collapsed.delete(g.dataset.o); else collapsed.add(g.dataset.o); };
}
function thought(t) { return t ? `<details class="thought"><summary>reasoning</summary><pre>${esc(t)}</pre></details>` : ''; }
function item(r) {
  const k = (t, cls, body) => `<div class="ev ${cls}"><div class="k">${t}${r.t ? ' · ' + new Date(r.t * 1000).toLocaleTimeString() : ''}</div>${body || ''}</div>`;
  const pre = (x) => x ? `<pre>${esc(x)}</pre>` : '';
  switch (r.type) {
    case 'spawn': return k('spawned in ' + esc(r.cwd), 'prompt');
    case 'resume': return k('resumed', 'prompt');
    case 'prompt':
      if (r.via === 'queued_turn') return k('queued messages start the next turn', 'prompt');
      return k(r.via === 'steer' ? 'steer (accepted)' : r.via === 'queued' ? 'message queued for the turn\'s end' : r.via === 'recovery' ? 'background recovery' : 'prompt',
        r.via === 'steer' || r.via === 'queued' ? 'steer' : 'prompt', pre(r.text));
    case 'tool_call': return k('tool · ' + esc(r.title || r.kind), 'tool', r.args ? pre(JSON.stringify(r.args, null, 1)) : '');
    case 'tool_call_update': return r.result ? k('tool result · ' + esc(r.status || ''), 'tool', pre(String(r.result).slice(0, 2000))) : '';
    case 'plan': return k('plan', '', '<pre>' + (r.entries || []).map((e) => esc(e.status === 'completed' ? '✓ ' : e.status === 'in_progress' ? '▶ ' : '· ') + esc(e.content)).join('\n') + '</pre>');
    case 'permission_request': return k('asked: ' + esc(r.title || r.kind), 'err');
    case 'permission_response': return k('answered ' + esc(r.option_id), '');
    case 'permission_auto': return k('policy ' + esc(r.decision) + ' ' + esc(r.title || ''), '');
    case 'turn_end': return k('turn end · ' + esc(r.stop_reason) + (r.recovery ? ' (recovered)' : ''), r.error_text ? 'err' : 'turn', thought(r.thought) + pre(r.error_text || r.text));
    case 'process_exit': return k('agent exited · ' + esc(r.reason || ''), 'err', pre(r.error_text));
    default: return '';
  }
}
function renderDetail() {
  const el = $('#detail');
  if (!current) { el.innerHTML = '<p class="empty">Select an agent.</p>'; el.dataset.sid = ''; return; }
  const s = current.session, live = ['running', 'starting', 'awaiting_decision', 'idle'].includes(s.status);
  const cfg = current.agent_config || {}, queued = current.queued_config;
  if (el.dataset.sid !== s.session_id) { // the parts a person types into are built once per agent
    el.dataset.sid = s.session_id;
    const opt = (name, values) => `<label>${name} <select data-k="${name}"><option value="">—</option>` + values.map((v) => `<option>${v}</option>`).join('') + '</select></label>';
    el.innerHTML = `<div id="head"></div><div id="decisions"></div>
<div class="actions"><textarea id="msg"></textarea><button class="primary" id="send">Send</button><button class="danger" id="stop">Stop</button><button id="resume">Resume</button></div>
<div class="actions">${opt('effort', ['auto', 'disabled', 'low', 'medium', 'high', 'xhigh', 'max'])}${opt('tool_approval', ['ask', 'auto', 'yolo'])}
${opt('work_mode', ['economy', 'balanced', 'delivery'])}<button id="configure">Configure</button><span class="note" id="cfg"></span></div>
<p class="note" id="status"></p><div class="tl" id="timeline"></div><div class="tl" id="livebox"></div>`;
    const act = async (action, params) => {
      const id = el.dataset.sid;
      $('#status').textContent = action + '…';
      try { const r = await api('/api/act', {session_id: id, action, params}); $('#status').textContent = action + ': ' + (r.delivered || r.status || 'done'); }
      catch (e) { $('#status').textContent = action + ' failed: ' + e.message; }
      refresh();
    };
    $('#send').onclick = () => { const m = $('#msg').value.trim(); if (m) { $('#msg').value = ''; act('send', {message: m}); } };
    $('#stop').onclick = () => act('stop', {});
    $('#resume').onclick = () => act('resume', {});
    $('#configure').onclick = () => { const p = {}; for (const sel of el.querySelectorAll('select[data-k]')) if (sel.value) p[sel.dataset.k] = sel.value; if (Object.keys(p).length) act('configure', p); };
    $('#decisions').onclick = (e) => {
      const b = e.target.closest('button[data-opt]'); if (!b) return;
      act('respond_permission', {option_id: b.dataset.opt, request_id: Number(b.closest('.decision').dataset.req)});
    };
  }
  $('#head').innerHTML = `<h2 style="margin:0;font-size:17px">${badge(s)}${esc(s.session_id)}</h2>
<div class="grid"><span>owner <b>${esc(s.owner)}</b></span><span>cwd <b>${esc(s.cwd)}</b></span><span>model <b>${esc(s.model)}</b></span>
<span>spent <b id="spent">${s.usage ? spent(s.usage, 'agent') : '—'}</b></span><span>effort <b>${esc(s.effort)}</b></span><span>approval <b>${esc(s.tool_approval)}</b></span><span>stop <b>${esc(s.stop_reason || '—')}</b></span>
${s.health ? `<span>health <b>${esc(s.health.state)}</b>${s.health.workspace_lease_holder ? ' behind ' + esc(s.health.workspace_lease_holder) : ''}</span>` : ''}
${s.current_work ? `<span>now <b>${esc(s.current_work.title || s.current_work.content)}</b></span>` : ''}
${s.worktree ? `<span>worktree <b>${esc(s.worktree.branch)}</b></span>` : ''}${s.forecast ? `<span>forecast <b>${s.forecast.ahead} ahead, ${s.forecast.behind} behind ${esc(s.forecast.target)}; ${s.forecast.clean ? 'merges cleanly' : 'conflicts: ' + esc((s.forecast.conflicts || []).join(', '))}${(s.forecast.collides_with || []).length ? '; collides with ' + esc(s.forecast.collides_with.join(', ')) : ''}</b></span>` : ''}${s.integration ? `<span>integration <b>${esc(s.integration.state)} into ${esc(s.integration.target)}</b></span>` : ''}${s.changes ? `<span>changes <b>${s.changes.files} file(s) +${s.changes.insertions} −${s.changes.deletions}, ${s.changes.commits} commit(s), ${s.changes.untracked} new</b></span>` : ''}</div>
<div class="card"><div class="note">task</div>${esc(s.task)}</div>`;
  const decisions = current.decisions.map((d) => `<div class="card decision" data-req="${d.request_id}"><b>${esc(d.kind)}</b>: ${esc(d.tool_call && (d.tool_call.title || d.tool_call.kind))}
${d.tool_call && d.tool_call.rawInput ? `<pre class="live">${esc(JSON.stringify(d.tool_call.rawInput, null, 1))}</pre>` : ''}
<div class="actions">${d.options.map((o) => `<button data-opt="${esc(o.optionId)}">${esc(o.name || o.optionId)}</button>`).join('')}<button data-opt="cancel" class="danger">cancel</button></div></div>`).join('');
  if ($('#decisions').dataset.html !== decisions) { $('#decisions').innerHTML = decisions; $('#decisions').dataset.html = decisions; }
  $('#msg').placeholder = s.status === 'running' ? 'Steer the running turn…' : 'Follow up…';
  $('#send').textContent = s.status === 'running' ? 'Steer' : 'Send';
  $('#send').disabled = !live;
  $('#stop').hidden = !live;
  $('#resume').hidden = live;
  $('#cfg').textContent = 'agent reports: ' + (Object.entries(cfg).map(([k, v]) => k + '=' + v).join(', ') || '—') +
    (queued ? ' · queued: ' + Object.entries(queued).map(([k, v]) => k + '=' + v).join(', ') : '');
  renderTimeline();
}
// The timeline: what is shown is appended to, and redrawn only when the journal was read anew.
function renderTimeline() {
  const tl = $('#timeline');
  if (tl.dataset.sid !== current.session.session_id || current.timeline_reset || current.dropped) {
    tl.dataset.sid = current.session.session_id;
    tl.innerHTML = timeline.map(item).join('');
  } else if (current.timeline.length) {
    tl.insertAdjacentHTML('beforeend', current.timeline.map(item).join(''));
  }
  const live = current.live_text ? (current.live_text_bytes ? '…' : '') + current.live_text : '';
  const open = $('#livebox details.thought') && $('#livebox details.thought').open;
  $('#livebox').innerHTML = live || current.live_thought ? `<div class="ev turn"><div class="k">streaming…</div>${thought(current.live_thought)}<pre class="live" id="live">${esc(live)}</pre></div>` : '';
  if (open) $('#livebox details.thought').open = true;
}
// The selected agent: only what its journal gained since the last look.
async function loadSelected() {
  const id = selected, since = current && current.session.session_id === id ? offset : null;
  const got = await api('/api/session?id=' + encodeURIComponent(id) + (since !== null ? '&since=' + since : ''));
  if (id !== selected) return;
  if (got.timeline_reset) timeline = [];
  timeline.push(...got.timeline);
  got.dropped = timeline.length > 400;
  if (got.dropped) timeline = timeline.slice(-400);
  offset = got.journal_offset;
  current = got;
  renderDetail();
}
// The list: at once when an agent is new or changed status, else at most once a second.
let fleetAt = 0, fleetTimer = null;
async function loadFleet() {
  fleetAt = Date.now();
  [fleet, routines, usage] = await Promise.all([api('/api/fleet'), api('/api/routines'), api('/api/usage')]);
  renderFleet();
  renderSpend();
}
function fleetSoon(now) {
  if (fleetTimer && !(now && fleetTimer.late)) return;
  clearTimeout(fleetTimer && fleetTimer.id);
  const late = !now && Date.now() - fleetAt < 1000;
  fleetTimer = { late, id: setTimeout(() => { fleetTimer = null; run(loadFleet); }, late ? 1000 - (Date.now() - fleetAt) : 0) };
}
// Runs one load at a time (a load asked for meanwhile runs once after it); errors show and retry.
let busy = Promise.resolve();
function run(load) {
  busy = busy.then(load).then(() => { $('#conn').textContent = 'live · ' + new Date().toLocaleTimeString(); },
    (e) => { $('#conn').textContent = e.message; setTimeout(refresh, 2000); });
  return busy;
}
let selectedQueued = false;
function refreshSelected() {
  if (!selected || selectedQueued) return;
  selectedQueued = true;
  run(() => { selectedQueued = false; return selected ? loadSelected() : null; });
}
function refresh() { fleetSoon(true); refreshSelected(); }
function changed(e) {
  let c = {};
  try { c = JSON.parse(e.data || '{}'); } catch { /* a bare nudge */ }
  if (!c.session_id) return refresh();
  const row = fleet && fleet.orchestrators.flatMap((o) => o.sessions).find((s) => s.session_id === c.session_id);
  fleetSoon(!row || row.status !== c.status);
  if (c.session_id === selected) refreshSelected();
}
function select(id) { selected = id || null; location.hash = id || ''; current = null; timeline = []; renderFleet(); renderDetail(); refreshSelected(); }
window.onhashchange = () => { if (location.hash.slice(1) !== (selected || '')) select(location.hash.slice(1)); };
const events = new EventSource('/api/events');
events.addEventListener('changed', changed);
events.onerror = () => { $('#conn').textContent = 'reconnecting…'; };
refresh();
]]

-- The fleet page.
function M.main()
  return [[<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>reasonix fleet</title><style>]] .. STYLE .. MAIN_STYLE .. [[</style></head><body>
<header><h1>reasonix fleet</h1><span class="sp"></span><span id="conn">connecting…</span>
<form method="post" action="/logout"><button type="submit">Log out</button></form></header>
<div id="app"><nav><section id="spend" hidden></section><div id="fleet"></div></nav><main id="detail"><p class="empty">Select an agent.</p></main></div>
<script>]] .. SCRIPT .. [[</script></body></html>]]
end

return M
