package ui_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// pages are every page of a signed-in user, with the job page of id.
func pages(id string) []string {
	return []string{"/ui/", "/ui/queue", "/ui/jobs", "/ui/jobs/" + id, "/ui/quotas", "/ui/nodes"}
}

// Names, reasons and messages that hold HTML are shown as text on every
// page: job names (the state keeps what the API was given), task
// messages, quarantine reasons, taints and tags.
func TestHTMLIsEscaped(t *testing.T) {
	t.Parallel()
	const evil = `<script>alert("x")</script><img src=x onerror=alert(1)>`
	e := newEnv(t, `
clusters: [{name: local}]
nodes:
- {name: g1, cpu: 16, memory: 64Gi, accelerators: {type: A100, count: 2}}
- {name: c1, cpu: 16, memory: 64Gi, taints: [{key: note, value: "x", effect: NoSchedule}], tags: {team: "a"}}
quotas:
- {scope: "user:u1", limits: {gpu/A100: 8, cpu: 32, memory: 128Gi}}
`)
	s, err := structs.ParseJobSpec([]byte(`{kind: command, name: x, command: [sleep, "1"], resources: {accelerators: {type: A100, count: 1}}}`))
	require.NoError(t, err)
	j, err := s.ToJob("u1")
	require.NoError(t, err)
	j.ID, j.Name = "evil-1", evil
	e.store.Must(t, &state.JobSubmit{Job: j, Now: apitest.T0})
	e.store.Schedule(t, apitest.T0)
	task := e.store.Tasks("evil-1")[0]
	// atom's preflight finds the accelerator bad: the node quarantines
	// it with atom's message as the reason, and the task fails with it.
	e.store.Must(t, &state.TaskUpdate{Events: []structs.TaskEvent{{Task: task.ID, State: structs.TaskFailed, ExitCode: 1,
		Message: evil, Reason: structs.ReasonPreflightFailed, Accelerators: []int{0}, Time: apitest.T0}}})
	e.writeLog(t, task.ID, evil+"\n")
	var node *structs.Node
	e.store.Read(func(st *state.State) { node = st.Nodes["g1"] })
	require.Len(t, node.Quarantined, 1, "the preflight quarantined the accelerator")

	for _, p := range append(pages("evil-1"), "/ui/nodes?type=quarantined") {
		body := e.page(t, "admin", p)
		assert.NotContains(t, body, "<script>alert", p)
		assert.NotContains(t, body, "<img src=x", p)
	}
	assert.Contains(t, e.page(t, "admin", "/ui/jobs"), `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`)
	assert.Contains(t, e.page(t, "admin", "/ui/nodes"), `quarantined since 2026-03-01 09:00:00: &lt;script&gt;`)
	assert.Contains(t, e.page(t, "admin", "/ui/"), `&lt;img src=x onerror=alert(1)&gt;`, "the overview lists the quarantine reason")
	status, body, resp := e.do(t, req{path: "/ui/jobs/evil-1/logs?task=" + string(task.ID), user: "u1"})
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"), "logs are text, never HTML")
	assert.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	assert.Equal(t, evil+"\n", body)
}

// No page ever shows a user's token or a task's allocation token; pages
// forbid inline scripts, framing and caching.
func TestNoSecretRendered(t *testing.T) {
	t.Parallel()
	e, tasks := placed(t)
	var secrets []string
	for _, tok := range e.store.Tokens() {
		secrets = append(secrets, tok)
	}
	for _, tok := range e.tokens {
		secrets = append(secrets, tok)
	}
	require.Len(t, secrets, 2+4)
	for _, user := range []structs.UserID{"u1", "admin"} {
		for _, p := range append(pages("web-1"), "/ui/jobs/web-1/logs?task="+string(tasks[0].ID), "/ui/signin") {
			status, body, resp := e.do(t, req{path: p, user: user})
			require.Contains(t, []int{200, 303}, status, p)
			for _, s := range secrets {
				assert.NotContains(t, body, s, "%s as %s", p, user)
			}
			assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", p)
			assert.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"), p)
			assert.Equal(t, "no-store", resp.Header.Get("Cache-Control"), p)
		}
	}
}

// ids returns the job IDs a page links to, in order, once each.
func ids(body string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, m := range regexp.MustCompile(`<a href="/ui/jobs/([a-z0-9-]+)">`).FindAllStringSubmatch(body, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// Users see their own and their projects' jobs on every page; admins
// all; a GPU held by a job a user may not see shows as held, unnamed.
func TestVisibility(t *testing.T) {
	t.Parallel()
	e, _ := placed(t)
	e.submit(t, "u2", "theirs-1", `{kind: command, name: theirs, command: [sleep, "1"], resources: {accelerators: {type: A100, count: 2}}}`)
	e.submit(t, "u2", "wait-1", `{kind: command, name: wait, priority: low, command: [sleep, "1"], resources: {accelerators: {type: A100, count: 8}}}`)
	e.store.Schedule(t, apitest.T0)
	require.Equal(t, structs.JobScheduled, e.store.Job("theirs-1").State)
	require.Equal(t, structs.JobPending, e.store.Job("wait-1").State)

	assert.Equal(t, []string{"web-1"}, ids(e.page(t, "u1", "/ui/jobs")))
	assert.Equal(t, []string{"web-1"}, ids(e.page(t, "m1", "/ui/jobs")), "a member sees the project's jobs")
	assert.Equal(t, []string{"theirs-1", "wait-1"}, ids(e.page(t, "u2", "/ui/jobs")), "newest first, then by ID")

	assert.ElementsMatch(t, []string{"web-1", "theirs-1", "wait-1"}, ids(e.page(t, "admin", "/ui/jobs")))
	assert.Equal(t, []string{}, ids(e.page(t, "u1", "/ui/queue")))
	assert.Contains(t, e.page(t, "u1", "/ui/queue"), "1 waiting in all, 1 of them other users' jobs (not shown)")
	assert.Equal(t, []string{"wait-1"}, ids(e.page(t, "u2", "/ui/queue")))

	nodes := e.page(t, "u1", "/ui/nodes")
	assert.NotContains(t, nodes, "theirs-1")
	assert.Contains(t, nodes, "another user's job")
	assert.Contains(t, nodes, `title="A100 0: held by a job you may not see"`)
	assert.Contains(t, e.page(t, "u2", "/ui/nodes"), `data-job="theirs-1"`)
	overview := e.page(t, "u1", "/ui/")
	assert.NotContains(t, overview, "theirs-1")
	assert.NotContains(t, overview, "wait-1")
}

// The Jobs table is filtered, ordered and paged on the server.
func TestJobsTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	for i := range 120 {
		prio := "low"
		if i%3 == 0 {
			prio = "normal"
		}
		e.submit(t, "u1", fmt.Sprintf("job-%03d", i), fmt.Sprintf(`{kind: command, name: job-%03d, priority: %s, command: [sleep, "1"], resources: {cpu: 100m, memory: 100Mi}}`, i, prio))
	}
	body := e.page(t, "u1", "/ui/jobs?sort=id")
	got := ids(body)
	require.Len(t, got, 50)
	assert.Equal(t, "job-000", got[0])
	assert.Equal(t, "job-049", got[49])
	assert.Contains(t, body, "1–50 of 120")
	assert.Contains(t, body, `<a href="/ui/jobs?page=2&amp;sort=id" rel="next">`)
	got = ids(e.page(t, "u1", "/ui/jobs?sort=id&page=3"))
	require.Len(t, got, 20)
	assert.Equal(t, "job-100", got[0])
	assert.Equal(t, "job-119", ids(e.page(t, "u1", "/ui/jobs?sort=-id"))[0])
	got = ids(e.page(t, "u1", "/ui/jobs?priority=normal&sort=id"))
	assert.Len(t, got, 40)
	assert.Equal(t, "job-003", got[1])
	assert.Equal(t, []string{"job-007", "job-070", "job-071", "job-072"}, ids(e.page(t, "u1", "/ui/jobs?q=07&sort=id&state=Pending"))[:4])
	assert.Equal(t, []string{}, ids(e.page(t, "u1", "/ui/jobs?state=Running")))
	assert.Contains(t, e.page(t, "u1", "/ui/jobs?state=Running"), "No jobs match these filters.")
	assert.Empty(t, ids(e.page(t, "u2", "/ui/jobs")), "u2 sees none of u1's jobs")
	// A page past the end shows the last one.
	assert.Len(t, ids(e.page(t, "u1", "/ui/jobs?page=99")), 20)
}

// The queue is in the scheduler's order with why each job waits: quota,
// node counts, never-fits vs not-now.
func TestQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.submit(t, "u1", "big-1", `{kind: command, name: big, command: [sleep, "1"], resources: {accelerators: {type: A100, count: 8}}}`)
	e.submit(t, "u1", "web-1", webSpec) // on the project's node: no node has 8 free
	e.submit(t, "u1", "low-1", `{kind: command, name: low, priority: low, command: [sleep, "1"], resources: {accelerators: {type: A100, count: 8}}}`)
	e.submit(t, "u1", "later-1", `{kind: command, name: later, command: [sleep, "1"], resources: {cpu: "30"}, nodeName: c1}`)
	e.store.Must(t, &state.NodeRemove{Name: "c1"}) // its one node is gone
	e.store.Schedule(t, apitest.T0)
	body := e.page(t, "u1", "/ui/queue")
	assert.Equal(t, []string{"later-1", "low-1"}, ids(body), "normal before low: big-1 was placed")
	assert.Contains(t, body, "<td>user:u1 at 0%</td>", "the fair-share column")
	assert.Contains(t, body, "can never fit")
	assert.Contains(t, body, "1 normal</span> (longest wait 1h00m)")
	job := e.page(t, "u1", "/ui/jobs/low-1")
	assert.Contains(t, job, "Why it waits")
	assert.Contains(t, job, "does not fit now")
}

// Quotas show use against the limit, split between placed and pending
// jobs.
func TestQuotas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.submit(t, "u1", "a-1", `{kind: command, name: a, command: [sleep, "1"], resources: {accelerators: {type: A100, count: 4}}}`)
	e.store.Schedule(t, apitest.T0)
	e.submit(t, "u1", "b-1", `{kind: command, name: b, command: [sleep, "1"], resources: {accelerators: {type: A100, count: 2}}}`)
	body := e.page(t, "u1", "/ui/quotas")
	assert.Contains(t, body, "<h2>user:u1 <a class=\"muted\" href=\"/ui/queue\">1 pending</a></h2>")
	assert.Regexp(t, `<td>gpu/A100</td>.*\n\s*<td class="num">4</td><td class="num">2</td><td class="num">6</td><td class="num">8</td>\s*<td class="num">75%</td>`, body)
	assert.NotContains(t, body, "user:u2", "another user's quota is not shown")
	assert.Contains(t, body, "Fair share: weight 1, 100% of the weights of the scopes waiting or running; usage 0.0 GPU-hours (decayed), 0% of theirs: at 0% of its share")
	assert.Contains(t, e.page(t, "admin", "/ui/quotas"), "user:u2")
}

// A task's output: its end (the last 64 KiB), or all of it.
func TestLogs(t *testing.T) {
	t.Parallel()
	e, tasks := placed(t)
	id := tasks[0].ID
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "line %05d of the output\n", i)
	}
	e.writeLog(t, id, b.String())
	status, body, _ := e.do(t, req{path: "/ui/jobs/web-1/logs?task=" + string(id), user: "u1"})
	require.Equal(t, http.StatusOK, status)
	assert.True(t, strings.HasPrefix(body, "(… earlier output not shown: the last 64 KiB follow; Follow shows all of it)\nline "), body[:100])
	assert.True(t, strings.HasSuffix(body, "line 09999 of the output\n"))
	assert.LessOrEqual(t, len(body), 64<<10+100)

	// Follow streams until the task ends: here it has, so all of it.
	e.store.Report(t, id, structs.TaskFailed, apitest.T0)
	status, body, _ = e.do(t, req{path: "/ui/jobs/web-1/logs?follow=1&task=" + string(id), user: "u1"})
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, b.String(), body)
	status, body, _ = e.do(t, req{path: "/ui/jobs/web-1/logs?follow=1", user: "u1"})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, "follow needs one task: add ?task=ID")
}

// A low job preempted by a normal one: both job pages show the event
// (each linking to the other job), and the overview lists the
// preemption among its recent events.
func TestPreemptionEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
clusters: [{name: local}]
nodes:
- {name: g1, cpu: 16, memory: 64Gi, accelerators: {type: A100, count: 2}}
quotas:
- {scope: "user:u1", limits: {gpu/A100: 8}}
`)
	e.submit(t, "u1", "low-1", `{kind: command, name: low, priority: low, command: [sleep, "1"], resources: {accelerators: {type: A100, count: 2}}}`)
	e.store.Schedule(t, apitest.T0)
	low := e.store.Tasks("low-1")[0]
	e.store.Report(t, low.ID, structs.TaskRunning, apitest.T0)
	e.submit(t, "u1", "normal-1", `{kind: command, name: normal, command: [sleep, "1"], resources: {accelerators: {type: A100, count: 2}}}`)
	e.store.Schedule(t, apitest.T0.Add(time.Minute))
	require.Equal(t, structs.TaskStopping, e.store.Tasks("low-1")[0].State, "the low job is preempted")

	body := e.page(t, "u1", "/ui/jobs/low-1")
	assert.Contains(t, body, `<span class="ev ev-warn">Preempted</span>`)
	assert.Contains(t, body, `preempted by normal-1: stopping its tasks on g1`)
	assert.Contains(t, body, `<a href="/ui/jobs/normal-1">normal-1 →</a>`)
	assert.Contains(t, body, `<span class="ev ev-ok">Started</span>`)
	body = e.page(t, "u1", "/ui/jobs/normal-1")
	assert.Contains(t, body, `<span class="ev ev-warn">Preempting</span>`)
	assert.Contains(t, body, `<a href="/ui/jobs/low-1">low-1 →</a>`)
	overview := e.page(t, "u1", "/ui/")
	assert.Contains(t, overview, "preempted by normal-1")
	assert.NotContains(t, e.page(t, "u2", "/ui/"), "preempted by", "another user's events are not shown")

	// The stopped task's end shows in the tasks table.
	e.store.Report(t, low.ID, structs.TaskFailed, apitest.T0.Add(2*time.Minute))
	body = e.page(t, "u1", "/ui/jobs/low-1")
	assert.Contains(t, body, `<td>2026-03-01 09:00:00</td><td>2026-03-01 09:02:00</td>`, "started, ended")
	assert.Contains(t, body, `<td><span class="state st-stopped">Stopped: Preempted</span></td><td class="num">0</td><td class="reason">Preempted</td>`,
		"stopped, as the API says, with what it exited with")
}

// The job page lists the job's events in the order they happened, as
// job events does: by time, then as recorded. Replica 1 started first,
// reported last. The page listed them newest recorded first.
func TestJobPageEventsInTheOrderTheyHappened(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	e.submit(t, "u1", "pair-1", `{kind: command, name: pair, replicas: 2, command: [sleep, "1"], resources: {cpu: "1"}}`)
	e.store.Schedule(t, apitest.T0)
	e.store.Report(t, "pair-1-0-a0", structs.TaskRunning, apitest.T0.Add(10*time.Second))
	e.store.Report(t, "pair-1-1-a0", structs.TaskRunning, apitest.T0.Add(5*time.Second))

	body := e.page(t, "u1", "/ui/jobs/pair-1")
	_, events, ok := strings.Cut(body, "<h2>Events")
	require.True(t, ok, body)
	var got []string
	for _, m := range regexp.MustCompile(`<td class="when">[^<]*:(\d\d)</td>.*?<span class="ev [^"]*">(\w+)</span></td>\s*<td>([^<]*)</td>`).FindAllStringSubmatch(events, -1) {
		got = append(got, m[1]+" "+m[2]+" "+m[3])
	}
	assert.Equal(t, []string{"00 Submitted ", "00 Placed pair-1-0-a0", "00 Placed pair-1-1-a0",
		"05 Started pair-1-1-a0", "10 Started pair-1-0-a0", "10 Running "}, got)
}
