package realnode_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// webPort is where the service's replicas serve.
const webPort = 8080

// webService is a service whose replicas serve "task TASK-ID" over HTTP
// on webPort with the cpu image's Perl (no Python, busybox or nc there),
// after writing the job process's PID to /tmp/job.pid.
const webService = `kind: service
name: web
replicas: 2
resources: {cpu: 200m, memory: 64Mi}
command:
  - perl
  - -e
  - |
    use IO::Socket::INET;
    open(my $f, ">", "/tmp/job.pid") or die "pid file: $!"; print $f $$; close $f;
    my $s = IO::Socket::INET->new(LocalPort => 8080, Listen => 16, ReuseAddr => 1) or die "listen: $!";
    $| = 1; print "serving on 8080\n";
    while (my $c = $s->accept) {
      while (my $l = <$c>) { last if $l =~ /^\r?\n$/ }
      print $c "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ntask $ENV{ATOM_TASK_ID}\n";
      close $c;
    }
`

// TestService: a service's replicas are Pods with atom as PID 1 serving
// on their Pod IPs (which the host reaches on the node's bridge); a
// replica whose process is killed is placed again, at once the first
// time and after the back-off the next; a Pod deleted by hand is
// replaced at once; scaling to 3, to 0 and back to 2 leaves that many
// Pods running and serving.
func TestService(t *testing.T) {
	e := nodetest.Start(t, nodetest.Options{})
	e.KubeletLogOnFailure(t)
	id := e.Submit(t, webService)
	live := waitServing(t, e, id, 2)

	t.Run("killed-replica-restarts-with-back-off", func(t *testing.T) {
		// The first exit: placed again at once.
		victim := live[0]
		start := time.Now()
		podExec(t, e, victim, "sh", "-c", "kill -KILL $(cat /tmp/job.pid)")
		ended, endedAt := waitTaskEnded(t, e, id, victim.ID)
		assert.Equal(t, structs.TaskFailed, ended.State)
		assert.Equal(t, 128+9, ended.ExitCode, "killed by SIGKILL, as the container's exit code says")
		// atom reports the end just before it exits: the Pod follows.
		var p *corev1.Pod
		require.Eventually(t, func() bool {
			var err error
			p, err = e.Pod(t, victim.ID)
			require.NoError(t, err, "the ended replica's Pod is kept for its log")
			return p.Status.Phase == corev1.PodFailed
		}, 30*time.Second, 100*time.Millisecond, "the Pod ends Failed")
		require.Len(t, p.Status.ContainerStatuses, 1)
		if term := p.Status.ContainerStatuses[0].State.Terminated; assert.NotNil(t, term) {
			assert.Equal(t, int32(137), term.ExitCode, "atom exits with its job's status")
		}
		live = waitServing(t, e, id, 2)
		again := replicaOf(live, victim.Index)
		require.NotNil(t, again)
		assert.NotEqual(t, victim.ID, again.ID, "a replica placed again is a new task, with a new Pod")
		t.Logf("first exit: replica %d placed again as %s after %.1fs (scheduled %.1fs after its end)", victim.Index, again.ID,
			time.Since(start).Seconds(), again.ScheduledAt.Sub(endedAt).Seconds())
		assert.Less(t, again.ScheduledAt.Sub(endedAt), 5*time.Second, "placed again at once the first time")
		st := e.CLI(t, "job", "status", string(id))
		assert.Regexp(t, `Restarts:\s+1 replica\(s\) placed again\n`, st)

		// The second exit in a row: a back-off of 10 s first.
		victim = again
		podExec(t, e, victim, "sh", "-c", "kill -KILL $(cat /tmp/job.pid)")
		ended, endedAt = waitTaskEnded(t, e, id, victim.ID)
		assert.Equal(t, 137, ended.ExitCode)
		js, err := e.Job(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("replica %d failed with exit code 137: killed by SIGKILL; placing it again after a back-off of 10s (2 exits in a row, of any replica)", victim.Index), js.Job.Reason)
		st = e.CLI(t, "job", "status", string(id))
		t.Logf("job status during the back-off:\n%s", st)
		assert.Regexp(t, `Restarts:\s+2 replica\(s\) placed again; back-off until `, st)
		// The next scheduling cycle says why the replica waits.
		why := ""
		assert.Eventually(t, func() bool {
			why, _ = e.Run("job", "why", string(id))
			return strings.Contains(why, "restart back-off: 2 replica exits in a row; placed again at ")
		}, 5*time.Second, 50*time.Millisecond, "job why says when the back-off ends")
		t.Logf("job why during the back-off: %s", why)
		live = waitServing(t, e, id, 2)
		again = replicaOf(live, victim.Index)
		require.NotNil(t, again)
		wait := again.ScheduledAt.Sub(endedAt)
		t.Logf("second exit: replica %d placed again as %s %.1fs after its end", victim.Index, again.ID, wait.Seconds())
		assert.GreaterOrEqual(t, wait, structs.RestartBackoffBase-time.Second/2, "placed again after the back-off")
		assert.Less(t, wait, structs.RestartBackoffBase+5*time.Second)
	})

	t.Run("pod-deleted-by-hand-is-replaced", func(t *testing.T) {
		victim := live[len(live)-1]
		start := time.Now()
		require.NoError(t, e.Cluster.Admin.CoreV1().Pods(nodetest.Namespace).Delete(context.Background(), kube.PodName(victim.ID), metav1.DeleteOptions{}))
		ended, endedAt := waitTaskEnded(t, e, id, victim.ID)
		t.Logf("deleted by hand: task %s %s exit %d: %s", victim.ID, ended.State, ended.ExitCode, ended.Message)
		assert.Equal(t, structs.TaskLost, ended.State, "a Pod deleted outside atom is lost, not the job's failure")
		assert.Equal(t, "lost: atom got SIGTERM from outside the coordinator (a Pod deleted or evicted, a node shutting down, a kill by hand); the job then ended: killed by SIGTERM", ended.Message)
		assert.Equal(t, 143, ended.ExitCode)
		live = waitServing(t, e, id, 2)
		again := replicaOf(live, victim.Index)
		require.NotNil(t, again)
		assert.NotEqual(t, victim.ID, again.ID)
		t.Logf("replica %d replaced by %s, serving %.1fs after the delete", victim.Index, again.ID, time.Since(start).Seconds())
		assert.Less(t, again.ScheduledAt.Sub(endedAt), 5*time.Second, "a lost replica is placed again at once")
	})

	t.Run("scale", func(t *testing.T) {
		for _, n := range []int{3, 0, 2} {
			start := time.Now()
			out := e.CLI(t, "service", "scale", string(id), fmt.Sprint(n))
			assert.Contains(t, out, fmt.Sprintf("service %s scaled to %d replica", id, n))
			live = waitServing(t, e, id, n)
			t.Logf("scaled to %d: %d Pods running and serving in %.1fs", n, n, time.Since(start).Seconds())
			if n == 0 {
				js, err := e.Job(context.Background(), id)
				require.NoError(t, err)
				assert.Equal(t, structs.JobRunning, js.Job.State)
				assert.Equal(t, "scaled to 0 replicas", js.Job.Reason)
			}
		}
	})
}

// replicaOf is the task of replica index among tasks, if any.
func replicaOf(tasks []*structs.Task, index int) *structs.Task {
	for _, x := range tasks {
		if x.Index == index {
			return x
		}
	}
	return nil
}

// liveTasks are the tasks of job id that hold resources, by replica.
func liveTasks(t *testing.T, e *nodetest.Env, id structs.JobID) []*structs.Task {
	t.Helper()
	js, err := e.Job(context.Background(), id)
	require.NoError(t, err)
	var live []*structs.Task
	for _, x := range js.Tasks {
		if x.State.HoldsResources() {
			live = append(live, x)
		}
	}
	slices.SortFunc(live, func(a, b *structs.Task) int { return a.Index - b.Index })
	return live
}

// waitServing waits until job id has n live tasks, all Running, each with
// its Pod Running and serving "task ID" at its Pod IP, and no other Pod of
// the job running; it returns the tasks.
func waitServing(t *testing.T, e *nodetest.Env, id structs.JobID, n int) []*structs.Task {
	t.Helper()
	var live []*structs.Task
	last := ""
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := e.Run("job", "status", string(id))
			logs, _ := e.Run("job", "logs", string(id))
			t.Logf("job status:\n%s\njob logs:\n%s", out, logs)
		}
	})
	ok := assert.Eventually(t, func() bool {
		live = liveTasks(t, e, id)
		if len(live) != n {
			last = fmt.Sprintf("%d live tasks", len(live))
			return false
		}
		for _, x := range live {
			if x.State != structs.TaskRunning {
				last = fmt.Sprintf("task %s %s", x.ID, x.State)
				return false
			}
			p, err := e.Pod(t, x.ID)
			if err != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
				last = fmt.Sprintf("pod of %s: %v", x.ID, err)
				return false
			}
			body, err := fetch(p.Status.PodIP)
			if want := "task " + string(x.ID) + "\n"; err != nil || body != want {
				last = fmt.Sprintf("page of %s at %s: %q, %v", x.ID, p.Status.PodIP, body, err)
				return false
			}
		}
		if running := runningPods(t, e, id); running != n {
			last = fmt.Sprintf("%d pods running", running)
			return false
		}
		return true
	}, 2*time.Minute, 200*time.Millisecond, "job %s: %d replicas running and serving", id, n)
	require.True(t, ok, "last: %s", last)
	return live
}

// runningPods counts the job's Pods Running and not being deleted.
func runningPods(t *testing.T, e *nodetest.Env, id structs.JobID) int {
	t.Helper()
	pods, err := e.Cluster.Admin.CoreV1().Pods(nodetest.Namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: kube.LabelJob + "=" + kube.LabelValue(string(id))})
	require.NoError(t, err)
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// fetch GETs the page a replica serves at ip.
func fetch(ip string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + net.JoinHostPort(ip, fmt.Sprint(webPort)) + "/")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("status %s", resp.Status)
	}
	return string(b), err
}

// waitTaskEnded waits until task tid of job id has ended and returns it.
// The time is when the test saw it ended (within 100 ms of its end).
func waitTaskEnded(t *testing.T, e *nodetest.Env, id structs.JobID, tid structs.TaskID) (*structs.Task, time.Time) {
	t.Helper()
	var ended *structs.Task
	e.WaitJob(t, id, "task "+string(tid)+" ends", func(_ *structs.Job, tasks []*structs.Task) bool {
		for _, x := range tasks {
			if x.ID == tid && !x.State.HoldsResources() {
				ended = x
				return true
			}
		}
		return false
	})
	return ended, time.Now()
}

// podExec runs argv in task x's container through the API server (as
// kubectl exec does) and returns its output.
func podExec(t *testing.T, e *nodetest.Env, x *structs.Task, argv ...string) string {
	t.Helper()
	req := e.Cluster.Admin.CoreV1().RESTClient().Post().Resource("pods").Namespace(nodetest.Namespace).Name(kube.PodName(x.ID)).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{Container: kube.ContainerName, Command: argv, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(e.Cluster.AdminConfig, "GET", req.URL().String())
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}), "exec %v in %s: %s", argv, x.ID, stderr.String())
	return stdout.String()
}
