// Drives the gateway's operator console in headless chromium (Playwright's
// library), as an operator would: signs in, watches tasks, cancels one.
// Run by gateway/tests/console/browser.rs through scripts/console-browser.sh.
//
//   drive.mjs live     watch task A appear, its bar move, it complete; cancel B
//   drive.mjs hostile  hostile values shown as text; a cross-site form refused
//   drive.mjs load     time to first render, frame gaps while tasks change
//
// Environment: CONSOLE_URL (http://ADDR/console), CONSOLE_TOKEN, CHROMIUM,
// SHOT (a PNG to save at the end), EVIL_URL (hostile: a page of another
// origin that posts to the console). It prints one line per step and reads
// the test's lines from stdin; it exits 1 on the first step that fails.
import { chromium } from "playwright-core";
import { createInterface } from "node:readline";

const mode = process.argv[2];
const { CONSOLE_URL, CONSOLE_TOKEN, CHROMIUM, SHOT, EVIL_URL } = process.env;
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (line) => console.log(line);
const fail = (why) => {
  console.log("FAIL " + why);
  process.exit(1);
};

async function read(prefix) {
  const { value, done } = await lines.next();
  if (done) fail("stdin closed while waiting for " + prefix);
  if (!value.startsWith(prefix + " ")) fail("expected " + prefix + ", got " + value);
  return value.slice(prefix.length + 1);
}

// The flags a closed network needs: no background fetches, no sandbox as root.
const browser = await chromium.launch({
  executablePath: CHROMIUM || "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
const dialogs = [];
page.on("dialog", async (dialog) => {
  dialogs.push(dialog.message());
  await dialog.dismiss();
});
const problems = [];
page.on("pageerror", (error) => problems.push(String(error)));

async function signIn() {
  const started = Date.now();
  await page.goto(CONSOLE_URL);
  await page.fill("#token", CONSOLE_TOKEN);
  await page.click("#sign-in");
  await page.waitForSelector("#live.on", { timeout: 15000 });
  return Date.now() - started;
}

async function row(id) {
  const selector = `tr[data-id="${id}"]`;
  await page.waitForSelector(selector, { timeout: 20000 });
  return selector;
}

async function live() {
  // A wrong credential first: the form says so and lets nobody in.
  await page.goto(CONSOLE_URL);
  await page.fill("#token", "not-the-operators-credential");
  await page.click("#sign-in");
  await page.waitForSelector("#wrong");
  if (await page.$("#rows")) fail("a wrong credential showed the tasks");
  say("REFUSED wrong credential");
  await signIn();
  say("READY");

  const a = await read("A");
  const rowA = await row(a);
  const isNew = await page.$eval(rowA, (tr) => tr.classList.contains("new"));
  if (!isNew) fail("task A was on the page already, not added by the feed");
  say("APPEARED " + a);
  const value = () => page.$eval(rowA + " progress", (bar) => (bar.hasAttribute("value") ? bar.value : -1));
  let first = await value();
  await page.waitForFunction(
    ([selector, before]) => {
      const bar = document.querySelector(selector + " progress");
      return bar && bar.hasAttribute("value") && bar.value > Math.max(before, 0) && bar.value < 1;
    },
    [rowA, first],
    { timeout: 20000 },
  );
  const later = await value();
  say(`MOVED ${first} ${later}`);
  await page.waitForSelector(rowA + '[data-status="completed"]', { timeout: 30000 });
  const done = await value();
  if (done !== 1) fail("a completed task's bar is at " + done);
  say("COMPLETED " + a);

  const b = await read("B");
  const rowB = await row(b);
  await page.click(rowB + " button.cancel");
  await page.waitForSelector(rowB + " button.confirm-yes");
  if ((await page.getAttribute(rowB, "data-status")) !== "working") fail("B changed before the confirmation");
  await page.click(rowB + " button.confirm-yes");
  await page.waitForSelector(rowB + '[data-status="cancelled"]', { timeout: 20000 });
  say("CANCELLED " + b);

  await page.waitForSelector('#tools .tool-card[data-tool="slow_compute"] svg.spark polyline', { timeout: 20000 });
  say("TOOLS");
  // The store card counts at most every 5 s: the picture waits for a count
  // that holds both tasks.
  await page.waitForFunction(() => {
    const names = [...document.querySelectorAll("#store dt")];
    const held = names.find((dt) => dt.textContent === "tasks held");
    return held && held.nextElementSibling.textContent === "2";
  }, null, { timeout: 20000 });
  await page.screenshot({ path: SHOT, fullPage: true });
  say("SHOT " + SHOT);
}

async function hostile() {
  await signIn();
  say("READY");
  const expected = JSON.parse(await read("ROWS"));
  for (const want of expected) {
    const selector = await row(want.id);
    const tool = await page.$eval(selector + " .tool", (cell) => cell.textContent);
    const message = await page.$eval(selector + " .message", (cell) => cell.textContent);
    if (tool !== want.tool) fail(`tool of ${want.id} shown as ${JSON.stringify(tool.slice(0, 80))}`);
    if (message !== want.message) fail(`message of ${want.id} shown as ${JSON.stringify(message.slice(0, 80))}`);
  }
  // Give the page's own scripts a turn to run anything that slipped in.
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0))));
  const injected = await page.evaluate(() => ({
    elements: document.querySelectorAll("main img, #rows img, #rows script, #tools img, #tools script, #rows iframe").length,
    pwned: window.__pwned === undefined ? null : window.__pwned,
  }));
  if (injected.elements !== 0) fail("markup from a value became elements: " + injected.elements);
  if (injected.pwned !== null) fail("a value's script ran: " + injected.pwned);
  if (dialogs.length) fail("a dialog opened: " + dialogs.join(" | "));
  say("TEXT " + expected.length);
  await page.screenshot({ path: SHOT, fullPage: false });
  say("SHOT " + SHOT);

  // A page of another origin posts to the console's cancel, in the same
  // browser that holds a session.
  const target = await read("TARGET");
  const evil = await browser.newPage();
  const answer = await evil.goto(EVIL_URL + "?target=" + encodeURIComponent(target));
  await evil.waitForLoadState();
  const after = evil.url();
  const text = await evil.evaluate(() => document.body.innerText);
  say("EVIL " + after + " " + text.replace(/\s+/g, " ").slice(0, 200) + " " + (answer ? answer.status() : ""));
}

async function load() {
  const took = await signIn();
  const rows = await page.$$eval("#rows tr", (trs) => trs.length);
  const timing = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    return { dom: nav ? Math.round(nav.domContentLoadedEventEnd) : -1 };
  });
  say(`RENDER ${took} ms to a live table of ${rows} rows (page ${timing.dom} ms to DOMContentLoaded)`);
  const gaps = await page.evaluate(
    () =>
      new Promise((resolve) => {
        const gaps = [];
        let last = performance.now();
        const end = last + 10000;
        function frame(now) {
          gaps.push(now - last);
          last = now;
          if (now < end) requestAnimationFrame(frame);
          else resolve(gaps);
        }
        requestAnimationFrame(frame);
      }),
  );
  gaps.sort((x, y) => x - y);
  const q = (p) => gaps[Math.min(gaps.length - 1, Math.floor(p * gaps.length))].toFixed(1);
  const shown = await page.$$eval("#rows tr", (trs) => trs.length);
  say(`FRAMES ${gaps.length} in 10 s, gap p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms; ${shown} rows shown`);
  const heap = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : -1));
  say(`HEAP ${heap}`);
}

try {
  if (mode === "live") await live();
  else if (mode === "hostile") await hostile();
  else if (mode === "load") await load();
  else fail("unknown mode " + mode);
  if (problems.length) fail("the page threw: " + problems.join(" | "));
  say("DONE");
} catch (error) {
  fail(String(error && error.stack ? error.stack : error).replace(/\n/g, " / "));
} finally {
  await browser.close();
}
process.exit(0);
