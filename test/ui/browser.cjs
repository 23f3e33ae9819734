// The dashboard in headless Chromium (Debian's, driven by playwright-core)
// against a coordinator dev cluster with real jobs. browser_test.go starts
// the cluster and runs this script; it prints one line per step and exits
// non-zero naming the step that failed.
//
// Environment: ATOM_URL (the coordinator), ALICE_TOKEN and BOB_TOKEN (two
// users), OUT (where screenshots go), CHROMIUM (the browser binary).
"use strict";
const { chromium } = require("playwright-core");

const base = process.env.ATOM_URL;
const out = process.env.OUT;
const wait = 30000; // ms: the most any step waits for something to happen

// api calls the coordinator's API as a user.
async function api(token, method, path, body) {
  const resp = await fetch(base + path, {
    method, body, headers: { Authorization: "Bearer " + token, "Content-Type": "application/yaml" },
  });
  const text = await resp.text();
  if (!resp.ok) throw new Error(`${method} ${path}: ${resp.status} ${text}`);
  return JSON.parse(text);
}

async function submit(token, spec) {
  return (await api(token, "POST", "/v1/jobs", spec)).jobID;
}

// until polls cond (an async function) until it returns a true value.
async function until(what, cond, ms = wait) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await cond();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms (last: ${last})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function jobState(token, id) {
  return (await api(token, "GET", "/v1/jobs/" + id)).job.state;
}

// text waits until the page's element sel contains want (a string or a
// RegExp) and returns its text.
async function text(page, sel, want) {
  return until(`${sel} shows ${want}`, async () => {
    const t = await page.locator(sel).first().textContent({ timeout: 1000 });
    return (typeof want === "string" ? t.includes(want) : want.test(t)) && t;
  });
}

async function shot(page, name) {
  await page.screenshot({ path: `${out}/${name}.png`, fullPage: true });
}

async function signIn(browser, token) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await ctx.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("dialog", (d) => d.accept());
  await page.goto(base + "/ui/jobs");
  if (!page.url().includes("/ui/signin")) throw new Error("a page without a session did not ask to sign in: " + page.url());
  await page.fill("input[name=token]", token);
  await Promise.all([page.waitForURL(/\/ui\/jobs$/), page.click("form.signin button")]);
  return page;
}

let step = "";
const pageErrors = []; // errors of the dashboard's own script: none expected
async function run() {
  const alice = process.env.ALICE_TOKEN, bob = process.env.BOB_TOKEN;
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM, headless: true,
    // launch gives Chromium an empty profile directory of its own.
    args: ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    step = "sign in";
    let page = await signIn(browser, alice);
    await shot(page, "signin-done");
    console.log("ok: signed in as alice, back on the page asked for");

    step = "a submitted job appears in Jobs and Queue with why it waits";
    const ticker = await submit(alice, `kind: command
name: ticker
command: [sh, -c, 'i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.3; done']
resources: {cpu: "2", memory: 1Gi}
`);
    await until("ticker running", async () => (await jobState(alice, ticker)) === "Running");
    const waiter = await submit(alice, `kind: command
name: waiter
command: [sleep, "600"]
resources: {cpu: "8", memory: 1Gi}
`);
    await until("waiter looked at", async () => (await api(alice, "GET", `/v1/jobs/${waiter}/why`)).why);
    await page.goto(base + "/ui/jobs");
    await text(page, "table.jobs", waiter);
    await text(page, "table.jobs", ticker);
    await page.goto(base + "/ui/queue");
    const row = `table.queue tr:has(a[href="/ui/jobs/${waiter}"])`;
    await text(page, row, "does not fit now");
    await text(page, row, /0\/2 nodes fit/);
    await shot(page, "queue");
    console.log("ok: the waiting job is in Jobs and Queue: " + (await page.locator(row + " .why").textContent()).replace(/\s+/g, " ").trim());

    step = "a low job preempted by a normal one shows both events";
    const filler = await submit(alice, `kind: command
name: filler
priority: low
command: [sleep, "600"]
resources: {accelerators: {type: A100, count: 2}}
`);
    await until("filler running", async () => (await jobState(alice, filler)) === "Running");
    await page.goto(base + "/ui/nodes");
    await until("the filler's 2 GPUs on the Nodes page", async () => (await page.locator(`a.cell[data-job="${filler}"]`).count()) === 2);
    const trainer = await submit(alice, `kind: command
name: trainer
command: [sleep, "600"]
resources: {accelerators: {type: A100, count: 2}}
`);
    await page.goto(base + "/ui/jobs?sort=name");
    // The Jobs page follows the trainer to Running without a reload.
    await text(page, `tr:has(a[href="/ui/jobs/${trainer}"]) .state`, "Running");
    await shot(page, "jobs");
    await page.goto(base + "/ui/jobs/" + filler);
    await text(page, "table.events", "Preempted");
    await text(page, "table.events", "preempted by " + trainer);
    await page.goto(base + "/ui/jobs/" + trainer);
    await text(page, "table.events", "Preempting");
    await text(page, "table.events", "preempting low-priority job " + filler);
    await shot(page, "job-preempting");
    console.log("ok: the low job shows Preempted, the normal one Preempting");

    step = "the Nodes page shows the GPUs the running job holds";
    await page.goto(base + "/ui/nodes");
    await until("the trainer's 2 GPUs on the Nodes page", async () => (await page.locator(`a.cell[data-job="${trainer}"]`).count()) === 2);
    const title = await page.locator(`a.cell[data-job="${trainer}"]`).first().getAttribute("title");
    if (!title.includes("held by job " + trainer)) throw new Error("cell title: " + title);
    await shot(page, "nodes");
    console.log("ok: gpu-1's accelerators are held by " + trainer + ": " + title);

    step = "following a running task's log shows new lines as they are written";
    await page.goto(base + "/ui/jobs/" + ticker);
    await text(page, "#log", /tick \d+/);
    await page.click("#log-follow");
    await text(page, "#log-status", "following");
    const seen = async () => Math.max(...[...(await page.locator("#log").textContent()).matchAll(/tick (\d+)/g)].map((m) => +m[1]));
    const first = await until("followed output", seen);
    const later = await until("lines written after following began", async () => ((await seen()) >= first + 5) && seen());
    await shot(page, "job-logs");
    console.log(`ok: following the log showed tick ${first}, then up to tick ${later} as they were written`);

    step = "the job page's Spec is the spec as submitted, without the job's status";
    await page.click("section details summary");
    await page.locator("pre.spec").waitFor({ state: "visible", timeout: wait });
    const spec = await page.locator("pre.spec").textContent();
    const submitted = `kind: command
name: ticker
command:
  - sh
  - -c
  - i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.3; done
resources:
  cpu: "2"
  memory: 1Gi
`;
    if (spec !== submitted) throw new Error("the Spec section shows:\n" + spec);
    console.log("ok: the Spec section shows the ticker's spec as submitted");

    step = "cancelling from the job page ends the job";
    await Promise.all([page.waitForURL(/done=cancel/), page.click("#cancel")]);
    await text(page, "#job-state", "Cancelled");
    await until("ticker cancelled in the API", async () => (await jobState(alice, ticker)) === "Cancelled");
    console.log("ok: cancelled from the job page: " + (await page.locator(".flash").textContent()));

    for (const [name, path] of [["overview", "/ui/"], ["queue", "/ui/queue"], ["quotas", "/ui/quotas"], ["job", "/ui/jobs/" + trainer]]) {
      await page.goto(base + path);
      await shot(page, name);
    }

    step = "another user cannot see the job";
    const other = await signIn(browser, bob);
    await text(other, "table.jobs", "No jobs match these filters.");
    const resp = await other.goto(base + "/ui/jobs/" + trainer);
    if (resp.status() !== 404) throw new Error(`bob opened ${trainer}: ${resp.status()}`);
    await text(other, ".error", `job ${trainer} not found`);
    await other.goto(base + "/ui/nodes");
    if ((await other.locator(`[data-job="${trainer}"]`).count()) !== 0) throw new Error("bob's Nodes page names alice's job");
    await text(other, "table.nodes", "another user's job");
    await shot(other, "other-user-nodes");
    console.log("ok: bob sees none of alice's jobs, and her GPUs as another user's");

    step = "sign out";
    await Promise.all([page.waitForURL(/\/ui\/signin$/), page.click("header form button")]);
    await page.goto(base + "/ui/");
    if (!page.url().includes("/ui/signin")) throw new Error("signed out, yet the overview opened: " + page.url());
    console.log("ok: signed out");
    if (pageErrors.length > 0) throw new Error("the dashboard's script failed: " + pageErrors.join("; "));
  } finally {
    await browser.close();
  }
}

run().then(() => console.log("all steps passed"), (err) => {
  console.error(`FAILED at step "${step}": ${err.stack || err}`);
  process.exit(1);
});
