package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
)

// The job mix. A gang is a `kind: command` job of 2 or 3 replicas on one
// A100 each, placed all or nothing like an MPI job (mpirun itself is left
// out: the suite is about the coordinator, and `make demo` runs real MPI).
const (
	kindBatch   = "batch"   // one replica, a few seconds; some fail once and restart (OnFailure)
	kindGang    = "gang"    // 2-3 replicas × 1 A100, all or nothing
	kindService = "service" // 1-3 replicas, runs until cancelled; scaled
	kindLow     = "low"     // low priority, 2 A100: preempted by normal work
)

// tracked is one submission and what the client was told about it.
type tracked struct {
	req, name, kind string
	owner           string
	replicas        int // a service's replicas as last acknowledged

	mu            sync.Mutex
	id            structs.JobID
	acked         bool // a reply named the job
	existing      bool // the reply came from a retry that found the job
	refused       bool // 409 over quota (no job made)
	unknown       bool // gave up without an answer
	cancelAcked   bool // a cancel was answered 200
	cancelEnded   bool // a cancel was answered 409: it had ended (or a lost reply's retry)
	scaleUnknown  bool // a scale never got an answer: its replicas are not known
	cancelUnknown bool
}

// workload is the four clients and what they did.
type workload struct {
	c    *cluster
	run  string // CHAOS_RUN value
	dir  string // for the fail-once markers
	seed uint64

	mu   sync.Mutex
	jobs []*tracked
	// problems the clients saw at once (a 404 for an acknowledged job...)
	problems []string

	retries      int // attempts after the first
	lostReplies  int // attempts the client stopped waiting for on purpose
	cancels      int
	scales       int
	scaleRefused int
}

func (w *workload) problem(format string, a ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems = append(w.problems, fmt.Sprintf(format, a...))
}

func (w *workload) count(f func()) {
	w.mu.Lock()
	f()
	w.mu.Unlock()
}

// simClient is one user submitting, cancelling and scaling.
type simClient struct {
	w    *workload
	n    int
	user string
	rng  *rand.Rand
	apis []*client.Client // one per server, with no retries of their own
	seq  int
	mine []*tracked
}

func (w *workload) newClient(n int) *simClient {
	user := fmt.Sprintf("u%d", n)
	c := &simClient{w: w, n: n, user: user, rng: rand.New(rand.NewPCG(w.seed, uint64(n)))}
	for _, s := range w.c.servers {
		api := client.New(s.url, w.c.tokens[user])
		api.Retries = 0
		api.HTTP = &http.Client{}
		c.apis = append(c.apis, api)
	}
	return c
}

// loop runs operations until stop is closed; ctx bounds the operation in
// flight (which finishes its retries after stop).
func (c *simClient) loop(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		switch p := c.rng.IntN(100); {
		case p < 30:
			c.submit(ctx, kindBatch)
		case p < 45:
			c.submit(ctx, kindGang)
		case p < 57:
			if c.liveServices() < 2 {
				c.submit(ctx, kindService)
			} else {
				c.scale(ctx)
			}
		case p < 70:
			c.submit(ctx, kindLow)
		case p < 85:
			c.cancel(ctx)
		default:
			c.scale(ctx)
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(150+c.rng.IntN(400)) * time.Millisecond):
		}
	}
}

func (c *simClient) liveServices() int {
	n := 0
	for _, t := range c.mine {
		t.mu.Lock()
		if t.kind == kindService && t.acked && !t.cancelAcked && !t.cancelEnded && !t.cancelUnknown {
			n++
		}
		t.mu.Unlock()
	}
	return n
}

// spec builds a job of kind, named for this client and submission.
func (c *simClient) spec(kind, name string) (string, int) {
	env := fmt.Sprintf("env: {CHAOS_RUN: %q}\n", c.w.run)
	switch kind {
	case kindBatch:
		secs := 1 + c.rng.IntN(3)
		if c.rng.IntN(4) == 0 { // fails on its first attempt, then succeeds
			marker := fmt.Sprintf("%s/%s.failed-once", c.w.dir, name)
			return fmt.Sprintf("kind: command\nname: %s\nrestartPolicy: OnFailure\n%scommand: [sh, -c, 'if [ -e %s ]; then exec sleep %d; fi; : > %s; exit 3']\nresources: {cpu: 500m, memory: 256Mi}\n",
				name, env, marker, secs, marker), 1
		}
		return fmt.Sprintf("kind: command\nname: %s\n%scommand: [sleep, \"%d\"]\nresources: {cpu: 500m, memory: 256Mi}\n", name, env, secs), 1
	case kindGang:
		n := 2 + c.rng.IntN(2)
		proj := ""
		if c.rng.IntN(2) == 0 {
			proj = "project: perception\n"
		}
		return fmt.Sprintf("kind: command\nname: %s\n%sreplicas: %d\n%scommand: [sleep, \"%d\"]\nresources: {cpu: 1, memory: 1Gi, accelerators: {type: A100, count: 1}}\n",
			name, proj, n, env, 2+c.rng.IntN(4)), n
	case kindService:
		n := 1 + c.rng.IntN(3)
		return fmt.Sprintf("kind: service\nname: %s\nreplicas: %d\n%scommand: [sleep, \"86400\"]\nresources: {cpu: 250m, memory: 128Mi}\n", name, n, env), n
	case kindLow:
		return fmt.Sprintf("kind: command\nname: %s\npriority: low\n%scommand: [sleep, \"%d\"]\nresources: {cpu: 1, memory: 1Gi, accelerators: {type: A100, count: 2}}\n",
			name, env, 5+c.rng.IntN(10)), 1
	}
	panic("unknown kind " + kind)
}

// attemptCtx bounds one attempt: usually 5 s; one in four is cut short
// on purpose, so the reply is lost while the command may still commit.
func (c *simClient) attemptCtx(ctx context.Context) (context.Context, context.CancelFunc, bool) {
	if c.rng.IntN(4) == 0 {
		d := time.Duration(20+c.rng.IntN(200)) * time.Millisecond
		ctx, cancel := context.WithTimeout(ctx, d)
		return ctx, cancel, true
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	return ctx, cancel, false
}

// opDeadline bounds how long one operation retries.
const opDeadline = 90 * time.Second

// retryable reports whether err leaves the outcome open: no answer, or 503.
func retryable(err error) bool {
	var ae *client.Error
	return !errors.As(err, &ae) || ae.Status == http.StatusServiceUnavailable
}

func (c *simClient) submit(ctx context.Context, kind string) {
	c.seq++
	name := fmt.Sprintf("c%d-%s-%d", c.n, kind, c.seq)
	spec, replicas := c.spec(kind, name)
	t := &tracked{req: client.NewRequestID(), name: name, kind: kind, owner: c.user, replicas: replicas}
	c.w.mu.Lock()
	c.w.jobs = append(c.w.jobs, t)
	c.w.mu.Unlock()
	c.mine = append(c.mine, t)
	deadline := time.Now().Add(opDeadline)
	for attempt := 0; ; attempt++ {
		actx, cancel, short := c.attemptCtx(ctx)
		res, err := c.apis[c.rng.IntN(len(c.apis))].SubmitJob(actx, []byte(spec), t.req)
		cancel()
		if attempt > 0 {
			c.w.count(func() { c.w.retries++ })
		}
		var ae *client.Error
		switch {
		case err == nil:
			t.mu.Lock()
			t.id, t.acked, t.existing = res.JobID, true, res.Existing
			t.mu.Unlock()
			return
		case errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Quota != nil:
			t.mu.Lock()
			t.refused = true
			t.mu.Unlock()
			return
		case !retryable(err):
			c.w.problem("submit %s (request %s): refused: %v", name, t.req, err)
			t.mu.Lock()
			t.refused = true
			t.mu.Unlock()
			return
		}
		if short && ctx.Err() == nil {
			c.w.count(func() { c.w.lostReplies++ })
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.mu.Lock()
			t.unknown = true
			t.mu.Unlock()
			return
		}
		time.Sleep(time.Duration(50+c.rng.IntN(150)) * time.Millisecond)
	}
}

// pick returns a random acknowledged job of this client that match.
func (c *simClient) pick(match func(t *tracked) bool) *tracked {
	var cands []*tracked
	for _, t := range c.mine {
		t.mu.Lock()
		ok := t.acked && !t.cancelAcked && !t.cancelEnded && !t.cancelUnknown && match(t)
		t.mu.Unlock()
		if ok {
			cands = append(cands, t)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return cands[c.rng.IntN(len(cands))]
}

func (c *simClient) cancel(ctx context.Context) {
	t := c.pick(func(t *tracked) bool { return true })
	if t == nil {
		return
	}
	c.w.count(func() { c.w.cancels++ })
	deadline := time.Now().Add(opDeadline)
	for {
		actx, cancel, _ := c.attemptCtx(ctx)
		_, err := c.apis[c.rng.IntN(len(c.apis))].CancelJob(actx, t.id)
		cancel()
		var ae *client.Error
		switch {
		case err == nil:
			t.mu.Lock()
			t.cancelAcked = true
			t.mu.Unlock()
			return
		case errors.As(err, &ae) && ae.Status == http.StatusConflict:
			// It had ended, or an earlier attempt whose reply was lost
			// cancelled it.
			t.mu.Lock()
			t.cancelEnded = true
			t.mu.Unlock()
			return
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			c.w.problem("cancel %s (%s): the acknowledged job is not found: %v", t.name, t.id, err)
			return
		case !retryable(err):
			c.w.problem("cancel %s (%s): %v", t.name, t.id, err)
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.mu.Lock()
			t.cancelUnknown = true
			t.mu.Unlock()
			return
		}
		time.Sleep(time.Duration(50+c.rng.IntN(150)) * time.Millisecond)
	}
}

func (c *simClient) scale(ctx context.Context) {
	t := c.pick(func(t *tracked) bool { return t.kind == kindService && !t.scaleUnknown })
	if t == nil {
		return
	}
	t.mu.Lock()
	want := 1 + (t.replicas+c.rng.IntN(2))%3 // 1..3, not the current count
	t.mu.Unlock()
	c.w.count(func() { c.w.scales++ })
	deadline := time.Now().Add(opDeadline)
	for {
		actx, cancel, _ := c.attemptCtx(ctx)
		_, err := c.apis[c.rng.IntN(len(c.apis))].ScaleService(actx, t.id, want)
		cancel()
		var ae *client.Error
		switch {
		case err == nil:
			t.mu.Lock()
			t.replicas = want
			t.mu.Unlock()
			return
		case errors.As(err, &ae) && ae.Status == http.StatusConflict && ae.Quota != nil:
			c.w.count(func() { c.w.scaleRefused++ })
			return
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
			c.w.problem("scale %s (%s): the acknowledged job is not found: %v", t.name, t.id, err)
			return
		case !retryable(err):
			c.w.problem("scale %s (%s) to %d: %v", t.name, t.id, want, err)
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.mu.Lock()
			t.scaleUnknown = true
			t.mu.Unlock()
			return
		}
		time.Sleep(time.Duration(50+c.rng.IntN(150)) * time.Millisecond)
	}
}
