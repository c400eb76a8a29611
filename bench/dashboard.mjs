// The browser side of the benchmark's dashboard rows (bench/run.lua drives it): Debian's chromium,
// headless, through playwright-core (installed with the end-to-end suite in tests/e2e).
// Run: node bench/dashboard.mjs URL AGENTS ROUNDS, the password in BENCH_DASHBOARD_PASSWORD.
// It logs in, then measures first paint: navigation start to the list showing AGENTS agents (the
// frame after they are in the DOM), ROUNDS times, against the floor: the same page as rendered,
// saved as static HTML without its script and served from the same origin. It prints
//   {"paint": [ms…], "floor": [ms…]}
// then answers commands, one JSON line each on stdin, with one JSON line on stdout:
//   {"cmd": "select", "id": SID}  show that agent (the page follows it live)    → {"ok": true}
//   {"cmd": "arm"}                note the next turn end the timeline shows      → {"ok": true}
//   {"cmd": "seen"}               wait for it: its wall-clock time, ms           → {"seen": ms}
//   {"cmd": "blank"}              leave the page (its event stream closes)       → {"ok": true}
// and exits when stdin ends.
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(join(here, '..', 'tests', 'e2e', 'package.json'));
const { chromium } = require('playwright-core');

const [url, agentsArg, roundsArg] = process.argv.slice(2);
const agents = Number(agentsArg), rounds = Number(roundsArg);
const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');

// In every page: note performance.now() in the frame after the list first shows `agents` agents.
const paintProbe = `(() => {
  const need = ${agents};
  const check = () => {
    if (window.__painted || document.querySelectorAll('.agent').length < need) return false;
    requestAnimationFrame(() => { window.__painted = performance.now(); });
    return true;
  };
  new MutationObserver((_, mo) => { if (check()) mo.disconnect(); }).observe(document, { childList: true, subtree: true });
})();`;

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(url + 'login');
  await page.fill('#password', process.env.BENCH_DASHBOARD_PASSWORD);
  await Promise.all([page.waitForURL(url), page.click('button[type=submit]')]);
  await page.addInitScript(paintProbe);
  // one look that is not measured: the floor is this page as rendered
  await page.goto(url);
  await page.waitForFunction(() => window.__painted);
  const floorHtml = (await page.content()).replace(/<script>[\s\S]*?<\/script>/g, '');
  await context.route(url + '__floor', (route) => route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: floorHtml }));
  const paint = [], floor = [];
  for (let i = 0; i < rounds; i++) {
    for (const [target, list] of [[url, paint], [url + '__floor', floor]]) {
      await page.goto('about:blank');
      await page.goto(target);
      list.push(await (await page.waitForFunction(() => window.__painted)).jsonValue());
    }
  }
  out({ paint, floor });

  for await (const line of createInterface({ input: process.stdin })) {
    const c = JSON.parse(line);
    if (c.cmd === 'select') {
      await page.goto(url + '#' + c.id);
      await page.locator(`.agent.sel[data-id="${c.id}"]`).waitFor();
      await page.locator('#timeline .ev').first().waitFor();
      out({ ok: true });
    } else if (c.cmd === 'arm') {
      await page.evaluate(() => {
        const tl = document.querySelector('#timeline');
        const before = tl.querySelectorAll('.ev.turn').length;
        window.__seen = null;
        const mo = new MutationObserver(() => {
          if (tl.querySelectorAll('.ev.turn').length > before) { window.__seen = performance.timeOrigin + performance.now(); mo.disconnect(); }
        });
        mo.observe(tl, { childList: true });
      });
      out({ ok: true });
    } else if (c.cmd === 'seen') {
      out({ seen: await (await page.waitForFunction(() => window.__seen, null, { timeout: 10000 })).jsonValue() });
    } else if (c.cmd === 'blank') {
      await page.goto('about:blank');
      out({ ok: true });
    } else {
      out({ error: 'unknown command ' + c.cmd });
    }
  }
} finally {
  await browser.close();
}
