// atom dashboard: refreshes the live part of a page, follows logs,
// confirms cancels. Pages work without it, only without live updates.
"use strict";
(function () {
  const live = document.getElementById("live");
  const main = document.querySelector("main");
  const updated = document.getElementById("updated");
  const every = 4000; // ms between refreshes
  let pick = null; // the job page's task list for logs

  // Forms that change something ask first.
  document.addEventListener("submit", function (e) {
    const msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) e.preventDefault();
  });

  function busy() {
    // Do not swap the table under a reader who selects text or types.
    const sel = window.getSelection();
    if (sel && !sel.isCollapsed && live.contains(sel.anchorNode)) return true;
    return live.contains(document.activeElement) && document.activeElement.matches("input, select, textarea");
  }

  async function refresh() {
    if (document.hidden || busy()) return;
    let resp;
    try {
      resp = await fetch(location.href, { headers: { "X-Atom-Live": "1" }, credentials: "same-origin", cache: "no-store" });
    } catch (err) {
      if (updated) { updated.textContent = "cannot reach the coordinator: retrying"; updated.classList.add("stale"); }
      return;
    }
    if (resp.status === 401) { location.reload(); return; } // lands on the sign-in page
    const body = await resp.text();
    if (!resp.ok) {
      if (updated) { updated.textContent = body.trim() || ("error " + resp.status); updated.classList.add("stale"); }
      return;
    }
    const open = Array.from(live.querySelectorAll("details[open] > summary")).map(function (s) { return s.textContent; });
    live.innerHTML = body;
    live.querySelectorAll("details > summary").forEach(function (s) {
      if (open.indexOf(s.textContent) >= 0) s.parentElement.open = true;
    });
    if (updated) { updated.textContent = "updated " + new Date().toLocaleTimeString(); updated.classList.remove("stale"); }
    syncTasks();
  }
  if (live && main && main.dataset.live) setInterval(refresh, every);

  // Logs of the job page: the end of a task's output, or all of it
  // followed as it is written.
  const logs = document.querySelector("section.logs");
  if (!logs) return;
  const job = logs.dataset.job;
  const pre = document.getElementById("log");
  pick = document.getElementById("log-task");
  const followBtn = document.getElementById("log-follow");
  const status = document.getElementById("log-status");
  const maxLines = 5000;
  let following = null; // the AbortController of the stream

  function logURL(follow) {
    return "/ui/jobs/" + encodeURIComponent(job) + "/logs?task=" + encodeURIComponent(pick.value) + (follow ? "&follow=1" : "");
  }
  function atBottom() { return pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4; }
  function trim() {
    const text = pre.textContent;
    let cut = 0, n = 0;
    for (let i = text.length - 1; i >= 0; i--) {
      if (text[i] === "\n" && ++n > maxLines) { cut = i + 1; break; }
    }
    if (cut > 0) pre.textContent = text.slice(cut);
  }

  async function tail() {
    if (!pick || !pick.value) return;
    stop();
    status.textContent = "";
    const resp = await fetch(logURL(false), { headers: { "X-Atom-Live": "1" }, credentials: "same-origin", cache: "no-store" });
    pre.textContent = (await resp.text()) || "(no output yet)";
    if (!resp.ok) status.textContent = "error " + resp.status;
    pre.scrollTop = pre.scrollHeight;
  }

  function stop() {
    if (following) following.abort();
    following = null;
    followBtn.setAttribute("aria-pressed", "false");
    followBtn.textContent = "Follow";
  }

  async function follow() {
    stop();
    const ctl = new AbortController();
    following = ctl;
    followBtn.setAttribute("aria-pressed", "true");
    followBtn.textContent = "Stop following";
    status.textContent = "following…";
    pre.textContent = "";
    try {
      const resp = await fetch(logURL(true), { headers: { "X-Atom-Live": "1" }, credentials: "same-origin", signal: ctl.signal });
      if (!resp.ok) {
        pre.textContent = await resp.text();
        status.textContent = "error " + resp.status;
        return;
      }
      const reader = resp.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const stick = atBottom();
        pre.append(dec.decode(value, { stream: true }));
        if (pre.textContent.length > 4 << 20) trim();
        if (stick) pre.scrollTop = pre.scrollHeight;
      }
      status.textContent = "the task has ended: all of its output is above";
    } catch (err) {
      if (err.name !== "AbortError") status.textContent = "the stream broke: " + err.message;
      return;
    } finally {
      if (following === ctl) { following = null; followBtn.setAttribute("aria-pressed", "false"); followBtn.textContent = "Follow"; }
    }
  }

  // The task list follows the tasks table as it refreshes.
  function syncTasks() {
    if (!pick) return;
    const rows = live.querySelectorAll("tr[data-task]");
    const want = Array.from(rows).map(function (r) { return r.dataset.task + " (" + r.dataset.state + ")"; });
    const have = Array.from(pick.options).map(function (o) { return o.textContent; });
    if (want.join("\n") === have.join("\n")) return;
    const keep = pick.value;
    pick.innerHTML = "";
    rows.forEach(function (r) {
      const o = document.createElement("option");
      o.value = r.dataset.task;
      o.textContent = r.dataset.task + " (" + r.dataset.state + ")";
      pick.append(o);
    });
    const first = live.querySelector("tr[data-log]");
    pick.value = keep || (first ? first.dataset.task : "");
    if (!keep && pick.value) tail();
  }

  pick.addEventListener("change", tail);
  document.getElementById("log-refresh").addEventListener("click", tail);
  followBtn.addEventListener("click", function () { if (following) stop(); else follow(); });
  if (pick.value) tail();
})();
