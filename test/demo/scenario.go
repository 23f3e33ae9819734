package demo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// clusterYAML is the local cluster: simulated nodes whose tasks run as
// processes on this machine.
const clusterYAML = `# Simulated nodes; their tasks run as processes on this machine.
clusters:
  - {name: local, backend: local}
pools:
  - {name: perception, project: perception, members: [alice, bob]}
nodes:
  - {name: a100-1, cpu: "56", memory: 944Gi, accelerators: {type: A100, count: 8}, tags: {fabric: ib}}
  - {name: a100-2, cpu: "56", memory: 944Gi, accelerators: {type: A100, count: 8}, tags: {fabric: ib}}
  - {name: v100-1, cpu: "48", memory: 384Gi, accelerators: {type: V100, count: 4}}
  - {name: cpu-1, cpu: "32", memory: 128Gi}
  - {name: perception-v100-1, pool: perception, cpu: "48", memory: 384Gi, accelerators: {type: V100, count: 4}}
  - {name: perception-cpu-1, pool: perception, cpu: "16", memory: 64Gi}
`

const clusterNodes = 6

// Job names, as the specs give them.
const (
	jobMPI   = "train-bev"
	jobWeb   = "web"
	jobFill  = "fill-idle"
	jobEval  = "eval"
	jobIB    = "ib-bench"
	jobOver  = "more-v100"
	jobHello = "hello"
)

// mpiRanks is the MPI job's rank count: 2 replicas × 2 GPUs, a rank per GPU.
const mpiRanks = 4

// step 0
func (d *demo) startCluster(ctx context.Context) error {
	d.say("Working in %s; programs from %s.", d.cfg.WorkDir, d.cfg.BinDir)
	d.tokens = map[string]string{}
	tokens := "users:\n"
	for _, u := range users {
		d.tokens[u] = randomToken()
		tokens += fmt.Sprintf("  - {name: %s, token: %s, admin: %t}\n", u, d.tokens[u], u == admin)
	}
	if err := os.WriteFile(d.path("tokens.yaml"), []byte(tokens), 0o600); err != nil {
		return err
	}
	d.say("Three users: ops (an admin), alice and bob; tokens.yaml holds their API tokens.")
	d.say("The cluster: two A100 nodes and a V100 node and a CPU node in the public pool; the project")
	d.say("pool perception (members alice and bob) has a V100 node and a CPU node. The GPUs are simulated:")
	d.say("atom's GPU check passes on this machine, and every task runs as a real process under atom.")
	if err := d.writeSpec(admin, "cluster.yaml", clusterYAML); err != nil {
		return err
	}
	secret := randomToken()
	var peers []string
	for i := 1; i <= 3; i++ {
		http, err := freePort()
		if err != nil {
			return err
		}
		raft, err := freePort()
		if err != nil {
			return err
		}
		s := &server{id: fmt.Sprintf("s%d", i), url: "http://" + http, raftAddr: raft, log: d.path(fmt.Sprintf("s%d.log", i))}
		d.servers = append(d.servers, s)
		peers = append(peers, "--peer", s.id+"="+s.url)
	}
	d.say("Start three coordinator servers: s1 bootstraps the cluster from cluster.yaml, s2 and s3 join it.")
	for i, s := range d.servers {
		s.args = []string{"server", "--id", s.id, "--http-addr", strings.TrimPrefix(s.url, "http://"), "--raft-addr", s.raftAddr,
			"--data-dir", d.path(s.id), "--tokens", d.path("tokens.yaml"), "--secret", secret,
			"--heartbeat-ttl", d.cfg.HeartbeatTTL.String(), "--cycle", d.cfg.Cycle.String()}
		if i == 0 {
			s.args = append(s.args, "--bootstrap", "--cluster-config", d.path("cluster.yaml"))
		} else {
			s.args = append(s.args, "--join", d.servers[0].url)
		}
		s.args = append(s.args, peers...)
		fmt.Fprintf(d.out, "%s$ %s > %s.log 2>&1 &\n", admin, d.shortCmd(s.args), s.id)
		if err := d.startServer(s); err != nil {
			return err
		}
	}
	for _, s := range d.servers {
		c := client.New(s.url, d.tokens[admin])
		if err := d.waitFor(ctx, "server "+s.id+" serves the cluster", func() (bool, string) {
			if !s.alive() {
				return false, "the process exited: see " + s.log
			}
			nodes, err := c.Nodes(ctx)
			if err != nil {
				return false, err.Error()
			}
			return len(nodes) == clusterNodes, fmt.Sprintf("%d nodes", len(nodes))
		}); err != nil {
			return err
		}
	}
	lead, err := d.leader(ctx)
	if err != nil {
		return err
	}
	d.addr = lead.url
	d.ok("three servers answer with the %d nodes; %s leads", clusterNodes, lead.id)
	d.say("The CLI talks to %s: export ATOM_ADDR=%s, and ATOM_TOKEN=<the user's token>.", lead.id, lead.url)
	if err := d.dashboard(ctx, lead.url); err != nil {
		return err
	}
	d.say("While the demo runs, watch it in the dashboard: open %s/ui/ and sign in with a token:", lead.url)
	d.say("  alice %s   ops (an admin, sees every job) %s", d.tokens["alice"], d.tokens[admin])
	if _, err := d.mustRun(ctx, admin, "node", "list"); err != nil {
		return err
	}
	_, err = d.mustRun(ctx, admin, "pool", "list")
	return err
}

// dashboard checks that the server at url serves the web dashboard's
// sign-in page.
func (d *demo) dashboard(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/ui/signin", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the dashboard: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("the dashboard: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Sign in to atom") {
		return fmt.Errorf("the dashboard at %s/ui/signin answered %s", url, resp.Status)
	}
	d.ok("the dashboard answers at %s/ui/", url)
	return nil
}

// shortCmd shows a server command line with the work dir's paths relative
// and the secret hidden.
func (d *demo) shortCmd(args []string) string {
	out := []string{"coordinator"}
	for i, a := range args {
		if i > 0 && args[i-1] == "--secret" {
			a = "$SECRET"
		}
		out = append(out, strings.ReplaceAll(a, d.cfg.WorkDir+string(filepath.Separator), ""))
	}
	return strings.Join(out, " ")
}

// step 1
func (d *demo) quotas(ctx context.Context) error {
	d.say("Quotas limit what normal-priority jobs hold in the public pool. alice may use 8 A100 GPUs,")
	d.say("bob 4 V100 GPUs, and project perception 4 A100 GPUs (plus some CPU and memory each).")
	specs := []struct{ file, scope, body string }{
		{"quota-alice.yaml", "user:alice", "scope: user:alice\nlimits: {cpu: \"16\", memory: 64Gi, gpu/A100: 8}\n"},
		{"quota-bob.yaml", "user:bob", "scope: user:bob\nlimits: {cpu: \"4\", memory: 16Gi, gpu/V100: 4}\n"},
		{"quota-perception.yaml", "project:perception", "scope: project:perception\nlimits: {cpu: \"8\", memory: 32Gi, gpu/A100: 4}\n"},
	}
	for _, s := range specs {
		if err := d.writeSpec(admin, s.file, s.body); err != nil {
			return err
		}
		if _, err := d.mustRun(ctx, admin, "quota", "set", "-f", s.file); err != nil {
			return err
		}
	}
	if _, err := d.mustRun(ctx, admin, "quota", "list"); err != nil {
		return err
	}
	c := d.client(admin)
	want := map[string]map[structs.ResourceKey]int64{
		"user:alice":         {"gpu/A100": 8},
		"user:bob":           {"gpu/V100": 4},
		"project:perception": {"gpu/A100": 4},
	}
	for _, s := range specs {
		q, err := c.Quota(ctx, structs.Scope(s.scope))
		if err != nil {
			return err
		}
		for k, v := range want[s.scope] {
			if q.Limits[k] != v {
				return fmt.Errorf("quota %s: %s is %d, want %d", s.scope, k, q.Limits[k], v)
			}
		}
	}
	d.ok("the three quotas are set")
	return nil
}

// job returns a job's status through the admin's client.
func (d *demo) job(ctx context.Context, name string) (*wire.JobStatus, error) {
	id, ok := d.jobs[name]
	if !ok {
		return nil, fmt.Errorf("job %s was not submitted", name)
	}
	return d.client(admin).Job(ctx, structs.JobID(id))
}

// current returns the tasks of the job's current attempt.
func current(js *wire.JobStatus) []*structs.Task {
	var out []*structs.Task
	for _, t := range js.Tasks {
		if t.Attempt == js.Job.Attempt {
			out = append(out, t)
		}
	}
	return out
}

// running waits until the job runs with n tasks of its current attempt
// running, and returns its status. A job that ends, or a task of a gang
// that ends while the gang runs, fails at once.
func (d *demo) running(ctx context.Context, name string, n int) (*wire.JobStatus, error) {
	var js *wire.JobStatus
	var broken error
	err := d.waitFor(ctx, name+" runs "+plural(n, "task"), func() (bool, string) {
		var err error
		if js, err = d.job(ctx, name); err != nil {
			return false, err.Error()
		}
		if js.Job.State.Ended() {
			broken = fmt.Errorf("%s ended: %s", name, describe(js))
			return true, ""
		}
		r := 0
		for _, t := range current(js) {
			switch {
			case t.State == structs.TaskRunning:
				r++
			case js.Job.IsGang() && js.Job.State == structs.JobRunning && !t.State.HoldsResources():
				broken = fmt.Errorf("replica %d of %s ended while the job runs: %s", t.Index, name, describe(js))
				return true, ""
			}
		}
		return js.Job.State == structs.JobRunning && r == n, describe(js)
	})
	if broken != nil {
		return js, broken
	}
	return js, err
}

// ended waits until the job has ended and returns its status.
func (d *demo) ended(ctx context.Context, name string) (*wire.JobStatus, error) {
	var js *wire.JobStatus
	err := d.waitFor(ctx, name+" ends", func() (bool, string) {
		var err error
		if js, err = d.job(ctx, name); err != nil {
			return false, err.Error()
		}
		return js.Job.State.Ended(), describe(js)
	})
	return js, err
}

// describe says what a job is doing, for errors.
func describe(js *wire.JobStatus) string {
	s := fmt.Sprintf("%s %s", js.Job.ID, js.Job.State)
	if js.Job.Reason != "" {
		s += " (" + js.Job.Reason + ")"
	}
	var ts []string
	for _, t := range current(js) {
		ts = append(ts, fmt.Sprintf("%s on %s: %s", t.ID, t.Node, t.State))
	}
	if len(ts) > 0 {
		s += "; tasks: " + strings.Join(ts, ", ")
	}
	return s
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func taskIDs(ts []*structs.Task) []structs.TaskID {
	var ids []structs.TaskID
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	slices.Sort(ids)
	return ids
}

// step 2
func (d *demo) submitJobs(ctx context.Context) error {
	src := filepath.Join(d.cfg.SrcDir, "atom", "testdata", "allreduce.c")
	d.say("alice's MPI program: an MPI_Allreduce over all ranks; rank 0 prints the sum and the rank count.")
	mpicc, err := exec.LookPath("mpicc")
	if err != nil {
		return fmt.Errorf("mpicc is missing: install openmpi-bin and libopenmpi-dev (make demo does)")
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("the MPI program's source is missing: %w", err)
	}
	prog := d.path("allreduce")
	fmt.Fprintf(d.out, "alice$ mpicc -O2 -o allreduce %s\n", src)
	if out, err := exec.CommandContext(ctx, mpicc, "-O2", "-o", prog, src).CombinedOutput(); err != nil {
		d.print(string(out))
		return fmt.Errorf("mpicc: %w", err)
	}
	barrier := d.path("mpi-go")
	d.say("The MPI job: a gang of 2 replicas with 2 A100 GPUs each, one replica per node, charged to project")
	d.say("perception. Replica 0 runs mpirun over both replicas (atom rsh launches the remote ranks), one")
	d.say("rank per GPU. Its ranks wait for the file mpi-go before they reduce, so that the job is still")
	d.say("running when the leader is killed in step 5.")
	mpi := fmt.Sprintf(`kind: mpi
name: %s
project: perception
command: [sh, -c, 'while [ ! -e %s ]; do sleep 0.2; done; exec %s']
replicas: 2
resources: {cpu: "4", memory: 32Gi, accelerators: {type: A100, count: 2}}
affinity: {spreadReplicas: true}
`, jobMPI, barrier, prog)
	if err := d.writeSpec("alice", "train-bev.yaml", mpi); err != nil {
		return err
	}
	id, err := d.submit(ctx, "alice", "train-bev.yaml", "--wait")
	if err != nil {
		return err
	}
	d.jobs[jobMPI] = string(id)
	js, err := d.running(ctx, jobMPI, 2)
	if err != nil {
		return err
	}
	ts := current(js)
	if ts[0].Node == ts[1].Node {
		return fmt.Errorf("both MPI replicas are on %s: want one per node", ts[0].Node)
	}
	for _, t := range ts {
		if t.Resources.AccelType != "A100" || t.Accels.Count() != 2 {
			return fmt.Errorf("MPI task %s holds %d %s GPUs, want 2 A100", t.ID, t.Accels.Count(), t.Resources.AccelType)
		}
	}
	if js.Job.ChargedScope != "project:perception" {
		return fmt.Errorf("the MPI job is charged to %q, want project:perception", js.Job.ChargedScope)
	}
	d.ok("%s runs replica 0 on %s and replica 1 on %s, 2 A100 each, charged to project:perception", id, ts[0].Node, ts[1].Node)

	port, err := freePortPair()
	if err != nil {
		return err
	}
	d.webPort = port
	d.say("bob's service: 2 replicas of a small HTTP server (test/demo/web) in project perception; replica i")
	d.say("listens on port PORT_BASE+i. A normal job of a project runs in the project's pool first.")
	web := fmt.Sprintf(`kind: service
name: %s
project: perception
replicas: 2
command: [%s]
env: {PORT_BASE: "%d"}
resources: {cpu: 500m, memory: 256Mi}
`, jobWeb, d.bin("atom-demo-web"), port)
	if err := d.writeSpec("bob", "web.yaml", web); err != nil {
		return err
	}
	if id, err = d.submit(ctx, "bob", "web.yaml", "--wait"); err != nil {
		return err
	}
	d.jobs[jobWeb] = string(id)
	if js, err = d.running(ctx, jobWeb, 2); err != nil {
		return err
	}
	for _, t := range current(js) {
		if t.Pool != "perception" {
			return fmt.Errorf("web task %s runs in pool %q, want perception", t.ID, t.Pool)
		}
	}
	if err := d.fetchReplicas(ctx, "bob", current(js)); err != nil {
		return err
	}
	d.ok("both replicas of %s answer, from the perception pool", id)

	d.say("alice's low-priority job fills the idle A100 GPUs: 2 replicas of 6 GPUs. Low jobs use no quota,")
	d.say("and give way when normal work needs the room.")
	fill := fmt.Sprintf(`kind: command
name: %s
priority: low
command: [sh, -c, 'echo "filling GPUs $ATOM_ACCELERATORS of $ATOM_NODE"; exec sleep 3600']
replicas: 2
resources: {cpu: "4", memory: 32Gi, accelerators: {type: A100, count: 6}}
`, jobFill)
	if err := d.writeSpec("alice", "fill-idle.yaml", fill); err != nil {
		return err
	}
	if id, err = d.submit(ctx, "alice", "fill-idle.yaml", "--wait"); err != nil {
		return err
	}
	d.jobs[jobFill] = string(id)
	if _, err = d.running(ctx, jobFill, 2); err != nil {
		return err
	}
	if _, err := d.mustRun(ctx, admin, "node", "list"); err != nil {
		return err
	}
	nodes, err := d.client(admin).Nodes(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if n.Capacity.AccelType == "A100" && n.PoolName() == structs.PublicPool && n.Allocated.Accels != n.Capacity.Accels {
			return fmt.Errorf("node %s has %d of %d A100 in use, want all", n.Name, n.Allocated.Accels, n.Capacity.Accels)
		}
	}
	d.ok("every A100 of the public pool is busy: 2 for the MPI job and 6 for %s on each node", id)
	return nil
}

// fetchReplicas fetches a page from each replica of the web service and
// checks that the replica answering is the task expected.
func (d *demo) fetchReplicas(ctx context.Context, user string, tasks []*structs.Task) error {
	for _, t := range tasks {
		url := fmt.Sprintf("http://127.0.0.1:%d/", d.webPort+t.Index)
		fmt.Fprintf(d.out, "%s$ curl -s %s\n", user, url)
		var body string
		err := d.waitFor(ctx, "replica answers at "+url, func() (bool, string) {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			body = string(b)
			return resp.StatusCode == http.StatusOK, resp.Status
		})
		if err != nil {
			return err
		}
		d.print(body)
		if !strings.Contains(body, "task "+string(t.ID)+",") {
			return fmt.Errorf("%s answered %q, want task %s", url, strings.TrimSpace(body), t.ID)
		}
	}
	return nil
}

// step 3
func (d *demo) preempt(ctx context.Context) error {
	before, err := d.job(ctx, jobFill)
	if err != nil {
		return err
	}
	d.say("alice's evaluation job is normal priority and needs 6 A100 GPUs on one node. None are free:")
	d.say("the scheduler preempts the low-priority job (all of it: it is a gang), which goes back to")
	d.say("Pending, and the evaluation runs in its place.")
	eval := fmt.Sprintf(`kind: command
name: %s
command: [sh, -c, 'echo "evaluating on GPUs $ATOM_ACCELERATORS of $ATOM_NODE"; exec sleep 15']
resources: {cpu: "8", memory: 64Gi, accelerators: {type: A100, count: 6}}
`, jobEval)
	if err := d.writeSpec("alice", "eval.yaml", eval); err != nil {
		return err
	}
	id, err := d.submit(ctx, "alice", "eval.yaml", "--wait")
	if err != nil {
		return err
	}
	d.jobs[jobEval] = string(id)
	js, err := d.running(ctx, jobEval, 1)
	if err != nil {
		return err
	}
	evalNode := current(js)[0].Node
	var fill *wire.JobStatus
	err = d.waitFor(ctx, jobFill+" is preempted and requeued", func() (bool, string) {
		if fill, err = d.job(ctx, jobFill); err != nil {
			return false, err.Error()
		}
		if fill.Job.Preemptions < 1 || fill.Job.State != structs.JobPending || fill.Job.Attempt <= before.Job.Attempt {
			return false, describe(fill)
		}
		for _, t := range fill.Tasks {
			if t.Attempt == before.Job.Attempt && (t.State.HoldsResources() || t.StopReason != structs.StopPreempted) {
				return false, fmt.Sprintf("task %s: %s, stop reason %q", t.ID, t.State, t.StopReason)
			}
		}
		return true, ""
	})
	if err != nil {
		return err
	}
	wasOn := false
	for _, t := range before.Tasks {
		wasOn = wasOn || t.Node == evalNode
	}
	if !wasOn {
		return fmt.Errorf("%s runs on %s, where %s was not", id, evalNode, jobFill)
	}
	d.ok("%s runs on %s; %s was preempted (its tasks stopped: Preempted) and is Pending again, attempt %d", id, evalNode, fill.Job.ID, structs.AttemptNumber(fill.Job.Attempt))
	if _, err := d.mustRun(ctx, "alice", "job", "status", string(fill.Job.ID)); err != nil {
		return err
	}
	_, err = d.mustRun(ctx, "alice", "job", "why", string(fill.Job.ID))
	return err
}

// step 4
func (d *demo) refusedAndPending(ctx context.Context) error {
	d.say("bob wants 4 V100 GPUs on a node with InfiniBand (selector fabric=ib). No V100 node has it:")
	d.say("the job is accepted, holds bob's quota, and waits; job why says what stops it.")
	ib := fmt.Sprintf(`kind: command
name: %s
command: [sh, -c, 'echo "benchmarking"; sleep 60']
resources: {cpu: "8", memory: 64Gi, accelerators: {type: V100, count: 4}}
selector: fabric=ib
`, jobIB)
	if err := d.writeSpec("bob", "ib-bench.yaml", ib); err != nil {
		return err
	}
	id, err := d.submit(ctx, "bob", "ib-bench.yaml")
	if err != nil {
		return err
	}
	d.jobs[jobIB] = string(id)
	var why *wire.WhyResponse
	err = d.waitFor(ctx, jobIB+" waits with its reasons", func() (bool, string) {
		if why, err = d.client("bob").Why(ctx, id); err != nil {
			return false, err.Error()
		}
		return why.Pending && why.Why != nil && len(why.Why.Filtered) > 0, why.Message
	})
	if err != nil {
		return err
	}
	if _, err := d.mustRun(ctx, "bob", "job", "why", string(id)); err != nil {
		return err
	}
	if !strings.Contains(why.Message, "selector fabric=ib") {
		return fmt.Errorf("job why %s says %q: want the selector named", id, why.Message)
	}
	d.ok("%s is Pending: %s", id, why.Message)

	d.say("bob asks for one more V100. His quota is 4 and the waiting job holds all 4: refused at once,")
	d.say("with what was asked, what is used and the limit.")
	if _, err := d.mustRun(ctx, "bob", "quota", "get", "user:bob"); err != nil {
		return err
	}
	over := fmt.Sprintf(`kind: command
name: %s
command: [sh, -c, 'echo "never runs"']
resources: {cpu: "2", memory: 8Gi, accelerators: {type: V100, count: 1}}
`, jobOver)
	if err := d.writeSpec("bob", "more-v100.yaml", over); err != nil {
		return err
	}
	r, err := d.coordinator(ctx, "bob", "job", "submit", "-f", "more-v100.yaml")
	if err != nil {
		return err
	}
	const want = "quota exceeded for user:bob: gpu/V100 quota 4, in use 4, requested 1"
	if r.code == 0 || !strings.Contains(r.out, want) {
		return fmt.Errorf("job submit -f more-v100.yaml exited %d saying %q: want a refusal saying %q", r.code, strings.TrimSpace(r.out), want)
	}
	jobs, err := d.client("bob").ListJobs(ctx, client.JobFilter{Owner: "bob"})
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if j.Name == jobOver {
			return fmt.Errorf("the refused submission made job %s", j.ID)
		}
	}
	d.ok("refused (exit %d) with asked 1, used 4, limit 4; no job was made", r.code)
	return nil
}

// step 5
func (d *demo) killLeader(ctx context.Context) error {
	mpiBefore, err := d.job(ctx, jobMPI)
	if err != nil {
		return err
	}
	webBefore, err := d.job(ctx, jobWeb)
	if err != nil {
		return err
	}
	lead, err := d.leader(ctx)
	if err != nil {
		return err
	}
	d.say("%s leads (its /metrics say atom_raft_leader 1); it started every task so far. Kill it, as a crash would.", lead.id)
	fmt.Fprintf(d.out, "%s$ kill -9 %d   # %s\n", admin, lead.cmd.Process.Pid, lead.id)
	killedAt := time.Now()
	if err := lead.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-lead.exited
	d.killed = lead
	next, err := d.leader(ctx)
	if err != nil {
		return err
	}
	d.ok("%s leads %s after the kill", next.id, time.Since(killedAt).Truncate(10*time.Millisecond))
	d.addr = next.url
	d.say("From now on the CLI talks to %s: export ATOM_ADDR=%s (its dashboard: %s/ui/)", next.id, next.url, next.url)

	d.say("A write through the new leader: alice runs a small command.")
	hello := fmt.Sprintf(`kind: command
name: %s
command: [sh, -c, 'echo "hello from $ATOM_TASK_ID on $ATOM_NODE"']
resources: {cpu: "1", memory: 1Gi}
`, jobHello)
	if err := d.writeSpec("alice", "hello.yaml", hello); err != nil {
		return err
	}
	id, err := d.submit(ctx, "alice", "hello.yaml", "--wait")
	if err != nil {
		return err
	}
	d.jobs[jobHello] = string(id)
	js, err := d.ended(ctx, jobHello)
	if err != nil {
		return err
	}
	if js.Job.State != structs.JobSucceeded {
		return fmt.Errorf("%s", describe(js))
	}
	if _, err := d.mustRun(ctx, "alice", "job", "logs", string(id)); err != nil {
		return err
	}
	d.ok("%s was placed by %s and Succeeded", id, next.id)

	// Two heartbeat TTLs after the kill, nothing the old leader started
	// has been declared lost or started twice.
	if wait := 2*d.cfg.HeartbeatTTL - time.Since(killedAt); wait > 0 {
		d.say("Wait two heartbeat TTLs (%s) after the kill: the tasks the old leader started heartbeat", 2*d.cfg.HeartbeatTTL)
		d.say("through the other servers, so none is declared lost or started again.")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	if _, err := d.mustRun(ctx, "alice", "job", "list"); err != nil {
		return err
	}
	for _, before := range []*wire.JobStatus{mpiBefore, webBefore} {
		name := before.Job.Name
		now, err := d.running(ctx, name, 2)
		if err != nil {
			return err
		}
		if !slices.Equal(taskIDs(current(before)), taskIDs(current(now))) {
			return fmt.Errorf("%s ran tasks %v before the kill and %v after: want the same", name, taskIDs(current(before)), taskIDs(current(now)))
		}
	}
	d.ok("%s and %s still run the same tasks as before the kill", mpiBefore.Job.ID, webBefore.Job.ID)
	web, err := d.job(ctx, jobWeb)
	if err != nil {
		return err
	}
	if err := d.fetchReplicas(ctx, "bob", current(web)); err != nil {
		return err
	}
	d.ok("both web replicas still answer")

	d.say("Release the MPI ranks: they reduce, and the job ends under the new leader.")
	fmt.Fprintf(d.out, "alice$ touch mpi-go\n")
	if err := os.WriteFile(d.path("mpi-go"), nil, 0o644); err != nil {
		return err
	}
	mpi, err := d.ended(ctx, jobMPI)
	if err != nil {
		return err
	}
	if mpi.Job.State != structs.JobSucceeded {
		return fmt.Errorf("the MPI job did not succeed: %s", describe(mpi))
	}
	d.ok("%s Succeeded", mpi.Job.ID)
	return nil
}

// step 6
func (d *demo) finish(ctx context.Context) error {
	mpi, err := d.job(ctx, jobMPI)
	if err != nil {
		return err
	}
	var launcher *structs.Task
	for _, t := range current(mpi) {
		if t.Index == 0 {
			launcher = t
		}
	}
	if launcher == nil {
		return fmt.Errorf("the MPI job has no replica 0: %s", describe(mpi))
	}
	if d.killed != nil {
		d.say("A task's output stays on the server that ran it, and any server fetches it from there. The MPI")
		d.say("job's launcher ran on %s, which was killed: restart %s with the same flags. It rejoins as a", d.killed.id, d.killed.id)
		d.say("follower and catches up.")
		fmt.Fprintf(d.out, "%s$ %s > %s.log 2>&1 &\n", admin, d.shortCmd(d.killed.args), d.killed.id)
		if err := d.startServer(d.killed); err != nil {
			return err
		}
		c := client.New(d.killed.url, d.tokens[admin])
		if err := d.waitFor(ctx, d.killed.id+" catches up", func() (bool, string) {
			js, err := c.Job(ctx, mpi.Job.ID)
			if err != nil {
				return false, err.Error()
			}
			return js.Job.State == structs.JobSucceeded, describe(js)
		}); err != nil {
			return err
		}
		d.ok("%s is back and has the MPI job's end", d.killed.id)
	}
	out, err := d.mustRun(ctx, "alice", "job", "logs", "--task", string(launcher.ID), string(mpi.Job.ID))
	if err != nil {
		return err
	}
	want := fmt.Sprintf("sum=%d size=%d", mpiRanks*(mpiRanks+1)/2, mpiRanks)
	if !slices.Contains(strings.Split(out, "\n"), want) {
		return fmt.Errorf("the MPI job's output %q lacks %q", strings.TrimSpace(out), want)
	}
	d.ok("rank 0 of %d printed %q: the allreduce ran across both replicas", mpiRanks, want)

	d.say("The evaluation ends; the low-priority job takes the idle GPUs back.")
	eval, err := d.ended(ctx, jobEval)
	if err != nil {
		return err
	}
	if eval.Job.State != structs.JobSucceeded {
		return fmt.Errorf("the evaluation did not succeed: %s", describe(eval))
	}
	fill, err := d.running(ctx, jobFill, 2)
	if err != nil {
		return err
	}
	d.ok("%s Succeeded; %s runs again (attempt %d, preempted %d time)", eval.Job.ID, fill.Job.ID, structs.AttemptNumber(fill.Job.Attempt), fill.Job.Preemptions)
	if _, err := d.mustRun(ctx, admin, "job", "list"); err != nil {
		return err
	}

	d.say("Done: cancel what still runs or waits.")
	for _, who := range []struct{ user, job string }{{"bob", jobWeb}, {"alice", jobFill}, {"bob", jobIB}} {
		if _, err := d.mustRun(ctx, who.user, "job", "cancel", d.jobs[who.job]); err != nil {
			return err
		}
	}
	want6 := map[string]structs.JobState{
		jobMPI: structs.JobSucceeded, jobWeb: structs.JobCancelled, jobFill: structs.JobCancelled,
		jobEval: structs.JobSucceeded, jobIB: structs.JobCancelled, jobHello: structs.JobSucceeded,
	}
	d.say("Each job's final state:")
	for _, name := range []string{jobMPI, jobWeb, jobFill, jobEval, jobIB, jobHello} {
		js, err := d.ended(ctx, name)
		if err != nil {
			return err
		}
		note := ""
		if js.Job.Preemptions > 0 {
			note = fmt.Sprintf(" (preempted %d time, attempt %d)", js.Job.Preemptions, structs.AttemptNumber(js.Job.Attempt))
		}
		fmt.Fprintf(d.out, "  %-10s %-18s %s%s\n", name, js.Job.ID, js.Job.State, note)
		if js.Job.State != want6[name] {
			return fmt.Errorf("%s ended %s, want %s", js.Job.ID, js.Job.State, want6[name])
		}
	}
	fmt.Fprintf(d.out, "  %-10s %-18s %s\n", jobOver, "-", "refused at submit (over quota)")
	d.ok("every job ended as narrated")

	d.say("Shut down: cancel anything left, stop the servers, and check that no process of the demo remains.")
	if err := d.shutdown(); err != nil {
		return err
	}
	if left := DemoProcesses(d.cfg.WorkDir); len(left) > 0 {
		return fmt.Errorf("processes left: %s", strings.Join(left, "; "))
	}
	d.ok("the servers stopped and no task process is left")
	return nil
}
