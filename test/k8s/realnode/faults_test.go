package realnode_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/atom-sched/atom/coordinator/kube"
	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/test/k8s/nodetest"
)

// faultService is a service of two replicas that sleep.
func faultService(name string) string {
	return `kind: service
name: ` + name + `
replicas: 2
resources: {cpu: 200m, memory: 64Mi}
command: [sh, -c, 'echo "replica $ATOM_REPLICA up"; exec sleep 3600']
`
}

// TestFaults: what happens to tasks when a container's process, atom
// itself, the kubelet or containerd dies on a real node: every task ends
// once with a reason or survives, no job is lost or doubled, and services
// are back at their replica count with exactly that many Pods running.
func TestFaults(t *testing.T) {
	grace := 5 * time.Second
	e := nodetest.Start(t, nodetest.Options{NodeGrace: grace})
	e.KubeletLogOnFailure(t)
	ctx := context.Background()

	t.Run("job-process-killed", func(t *testing.T) {
		id := e.Submit(t, "kind: command\nname: victim\ncommand: [sh, -c, 'echo up; exec sleep 3600']\nresources: {cpu: 200m, memory: 64Mi}\n")
		_, tasks := e.WaitJob(t, id, "runs", nodetest.Running)
		pod, err := e.Pod(t, tasks[0].ID)
		require.NoError(t, err)
		atomPID := containerPID(t, e, pod)
		// The Pod is Running once runc has started the container; its
		// init may still be runc's, about to exec atom.
		require.Eventually(t, func() bool { return cmdline(atomPID)[0] == "/app/atom" }, 10*time.Second, 20*time.Millisecond,
			"the container's init is atom: %q", cmdline(atomPID))
		sleep := waitDescendant(t, atomPID, "sleep")
		require.NoError(t, syscallKill(sleep))
		j, tasks := e.WaitJob(t, id, "ends", nodetest.Ended)
		t.Logf("job %s: %s (%s); task %s exit %d: %s", id, j.State, j.Reason, tasks[0].State, tasks[0].ExitCode, tasks[0].Message)
		require.Len(t, tasks, 1, "not restarted (restartPolicy Never)")
		assert.Equal(t, structs.JobFailed, j.State)
		assert.Equal(t, structs.TaskFailed, tasks[0].State)
		assert.Equal(t, 137, tasks[0].ExitCode)
		assert.Equal(t, "killed by SIGKILL", tasks[0].Message)
		assert.Equal(t, "replica 0 failed with exit code 137: killed by SIGKILL", j.Reason)
		podEndsWith(t, e, tasks[0].ID, 137)
	})

	t.Run("atom-killed", func(t *testing.T) {
		id := e.Submit(t, faultService("atom-killed"))
		_, tasks := e.WaitJob(t, id, "runs", twoRunning)
		victim := tasks[0]
		pod, err := e.Pod(t, victim.ID)
		require.NoError(t, err)
		atomPID := containerPID(t, e, pod)
		require.NoError(t, syscallKill(atomPID))
		ended := waitTask(t, e, id, victim.ID, func(x *structs.Task) bool { return !x.State.HoldsResources() })
		t.Logf("atom killed: task %s %s exit %d: %s", ended.ID, ended.State, ended.ExitCode, ended.Message)
		assert.Equal(t, structs.TaskFailed, ended.State)
		assert.Equal(t, 137, ended.ExitCode)
		assert.Equal(t, "Error: exit code 137 (SIGKILL) and no report from atom: atom itself was killed, or could not reach the coordinator", ended.Message)
		podEndsWith(t, e, victim.ID, 137)
		assert.Contains(t, e.CLI(t, "job", "status", string(id)), string(victim.ID)+" ")
		exactlyRunning(t, e, id, 2)
		e.CLI(t, "service", "scale", string(id), "0")
		exactlyRunning(t, e, id, 0)
	})

	t.Run("containerd-restarted", func(t *testing.T) {
		svc := e.Submit(t, faultService("through-containerd"))
		_, before := e.WaitJob(t, svc, "runs", twoRunning)
		job := e.Submit(t, "kind: command\nname: through\ncommand: [sh, -c, 'for i in $(seq 1 20); do echo tick $i; sleep 0.5; done']\nresources: {cpu: 200m, memory: 64Mi}\n")
		e.WaitJob(t, job, "runs", nodetest.Running)
		uids := map[string]string{}
		for _, x := range before {
			p, err := e.Pod(t, x.ID)
			require.NoError(t, err)
			uids[p.Name] = string(p.UID)
		}
		start := time.Now()
		e.Node.RestartContainerd(t)
		t.Logf("containerd restarted in %.1fs", time.Since(start).Seconds())

		j, jt := e.WaitJob(t, job, "ends", nodetest.Ended)
		assert.Equal(t, structs.JobSucceeded, j.State, j.Reason)
		require.Len(t, jt, 1)
		out := e.CLI(t, "job", "logs", string(job))
		assert.Contains(t, out, "tick 20\n", "the job ran to its end through the restart")

		_, after := e.WaitJob(t, svc, "runs", twoRunning)
		require.Len(t, after, 2, "no replica ended")
		for i := range after {
			assert.Equal(t, before[i].ID, after[i].ID, "the same tasks")
			p, err := e.Pod(t, after[i].ID)
			require.NoError(t, err)
			assert.Equal(t, uids[p.Name], string(p.UID), "the same Pods")
			require.Len(t, p.Status.ContainerStatuses, 1)
			assert.Zero(t, p.Status.ContainerStatuses[0].RestartCount)
		}
		exactlyRunning(t, e, svc, 2)
		e.CLI(t, "service", "scale", string(svc), "0")
		exactlyRunning(t, e, svc, 0)
	})

	t.Run("kubelet-stopped", func(t *testing.T) {
		svc := e.Submit(t, faultService("through-kubelet"))
		_, before := e.WaitJob(t, svc, "runs", twoRunning)
		batch := e.Submit(t, "kind: command\nname: onfail\nrestartPolicy: OnFailure\ncommand: [sh, -c, 'echo attempt $ATOM_ATTEMPT; [ \"$ATOM_ATTEMPT\" -gt 0 ] || exec sleep 3600']\nresources: {cpu: 200m, memory: 64Mi}\n")
		_, bt := e.WaitJob(t, batch, "runs", nodetest.Running)
		var oldContainers []string
		for _, x := range append(append([]*structs.Task{}, before...), bt...) {
			p, err := e.Pod(t, x.ID)
			require.NoError(t, err)
			oldContainers = append(oldContainers, containerID(p))
		}

		e.Node.StopKubelet(t)
		stopped := time.Now()
		require.NoError(t, e.Cluster.SetNodeUnknown(ctx, e.Node.Name))
		// Past the grace every task on the node is lost, with a reason.
		for _, x := range append(append([]*structs.Task{}, before...), bt...) {
			jobID := svc
			if x.Job == batch {
				jobID = batch
			}
			lost := waitTask(t, e, jobID, x.ID, func(x *structs.Task) bool { return !x.State.HoldsResources() })
			t.Logf("kubelet down %.1fs: task %s %s: %s", time.Since(stopped).Seconds(), lost.ID, lost.State, lost.Message)
			assert.Equal(t, structs.TaskLost, lost.State)
			// The grace, and at most a sweep (1 s) more, rounded.
			assert.Regexp(t, `^lost: node `+e.Node.Name+` has not been Ready for [56]s$`, lost.Message)
		}
		for _, x := range before {
			assert.Contains(t, e.Log.String(), `msg="task lost: its node is not ready" cluster=`+nodetest.Cluster+` task=`+string(x.ID)+` node=`+e.Node.Name,
				"the coordinator's log says why")
		}
		st := e.CLI(t, "job", "status", string(svc))
		assert.Regexp(t, `State:\s+Running: replica \d was lost: node `+e.Node.Name+` has not been Ready for [56]s; placing it again\n`, st)
		assert.Regexp(t, `(?m)^`+string(before[0].ID)+`\s.*\sLost: node `+e.Node.Name+` has not been Ready for [56]s\s`, st)
		// atom in each old container, which runs on with its kubelet
		// gone, hears that its task has ended and stops the job: the
		// containers exit before the node is back.
		require.Eventually(t, func() bool {
			out, err := e.Node.Ctr("tasks", "ls").Output()
			if err != nil {
				return false
			}
			for _, line := range strings.Split(string(out), "\n") {
				if f := strings.Fields(line); len(f) >= 3 && slices.Contains(oldContainers, f[0]) && f[2] != "STOPPED" {
					return false
				}
			}
			return true
		}, 30*time.Second, 200*time.Millisecond, "the old containers stop while the kubelet is down")
		t.Logf("old containers stopped by atom %.1fs after the kubelet", time.Since(stopped).Seconds())
		t.Logf("job why while the node is down:\n%s", e.CLI(t, "job", "why", string(svc)))
		assert.GreaterOrEqual(t, time.Since(stopped), grace)
		for _, x := range before {
			_, err := e.Pod(t, x.ID)
			assert.True(t, apierrors.IsNotFound(err), "the lost task's Pod is deleted: %v", err)
		}
		// Nothing is placed on the node while it is down.
		js, err := e.Job(ctx, svc)
		require.NoError(t, err)
		for _, x := range js.Tasks {
			assert.False(t, x.State == structs.TaskRunning, "task %s runs while the node is down", x.ID)
		}

		start := time.Now()
		e.Node.StartKubelet(t)
		t.Logf("kubelet back, node Ready in %.1fs", time.Since(start).Seconds())

		_, after := e.WaitJob(t, svc, "runs its two replicas again", twoRunning)
		t.Logf("service back at 2 replicas %.1fs after the kubelet started", time.Since(start).Seconds())
		for _, x := range after {
			if x.State == structs.TaskRunning {
				assert.False(t, slices.ContainsFunc(before, func(b *structs.Task) bool { return b.ID == x.ID }), "placed again: new tasks")
			}
		}
		j, bt2 := e.WaitJob(t, batch, "ends", nodetest.Ended)
		t.Logf("batch job %s: %s (%s), %d tasks", batch, j.State, j.Reason, len(bt2))
		assert.Equal(t, structs.JobSucceeded, j.State, j.Reason)
		require.Len(t, bt2, 2, "restarted once (OnFailure), not doubled")
		assert.Equal(t, structs.TaskLost, bt2[0].State)
		assert.Equal(t, structs.TaskSucceeded, bt2[1].State)
		assert.Equal(t, 1, bt2[1].Attempt)
		assert.Contains(t, e.CLI(t, "job", "logs", string(batch)), "attempt 1\n")
		exactlyRunning(t, e, svc, 2)
		// The old containers are gone from the node.
		require.Eventually(t, func() bool {
			out, err := e.Node.Ctr("tasks", "ls").Output()
			if err != nil {
				return false
			}
			for _, c := range oldContainers {
				if strings.Contains(string(out), c) {
					return false
				}
			}
			return true
		}, time.Minute, 200*time.Millisecond, "the old containers are gone from the node")
	})
}

// twoRunning is a WaitJob condition: exactly two tasks Running, every
// other ended.
func twoRunning(j *structs.Job, tasks []*structs.Task) bool {
	n := 0
	for _, x := range tasks {
		switch {
		case x.State == structs.TaskRunning:
			n++
		case x.State.HoldsResources():
			return false
		}
	}
	return j.State == structs.JobRunning && n == 2
}

// waitTask waits until task id of job satisfies cond and returns it.
func waitTask(t *testing.T, e *nodetest.Env, job structs.JobID, id structs.TaskID, cond func(*structs.Task) bool) *structs.Task {
	t.Helper()
	var got *structs.Task
	e.WaitJob(t, job, "task "+string(id), func(_ *structs.Job, tasks []*structs.Task) bool {
		for _, x := range tasks {
			if x.ID == id && cond(x) {
				got = x
				return true
			}
		}
		return false
	})
	return got
}

// exactlyRunning waits until job has exactly n Pods, all Running and not
// being deleted, and as many Running tasks.
func exactlyRunning(t *testing.T, e *nodetest.Env, job structs.JobID, n int) {
	t.Helper()
	var last string
	ok := assert.Eventually(t, func() bool {
		pods, err := e.Cluster.Admin.CoreV1().Pods(nodetest.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelJob + "=" + kube.LabelValue(string(job))})
		if err != nil {
			return false
		}
		running, other := 0, []string{}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			} else if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				other = append(other, p.Name+" "+string(p.Status.Phase))
			}
		}
		st, err := e.Job(context.Background(), job)
		if err != nil {
			return false
		}
		tasks := 0
		for _, x := range st.Tasks {
			if x.State == structs.TaskRunning {
				tasks++
			}
		}
		last = strconv.Itoa(running) + " Pods running, others " + strings.Join(other, ", ") + "; " + strconv.Itoa(tasks) + " tasks running"
		return running == n && len(other) == 0 && tasks == n
	}, 2*time.Minute, 100*time.Millisecond)
	if !ok {
		t.Fatalf("job %s: not exactly %d Pods and tasks running; last: %s", job, n, last)
	}
}

// podEndsWith waits until task id's Pod has ended with the container's
// exit code.
func podEndsWith(t *testing.T, e *nodetest.Env, id structs.TaskID, code int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		p, err := e.Pod(t, id)
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		return p.Status.Phase == corev1.PodFailed && term != nil && term.ExitCode == code
	}, 30*time.Second, 100*time.Millisecond, "task %s's Pod ends Failed, its container with exit code %d", id, code)
}

// containerID is the ID of Pod p's task container in containerd.
func containerID(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == kube.ContainerName {
			return strings.TrimPrefix(c.ContainerID, "containerd://")
		}
	}
	return ""
}

// containerPID is the host PID of Pod p's task container's init process,
// as containerd lists its task.
func containerPID(t *testing.T, e *nodetest.Env, p *corev1.Pod) int {
	t.Helper()
	id := containerID(p)
	require.NotEmpty(t, id, "pod %s has a container", p.Name)
	out, err := e.Node.Ctr("tasks", "ls").Output()
	require.NoError(t, err)
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == id {
			pid, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			return pid
		}
	}
	t.Fatalf("container %s of pod %s is not in ctr tasks ls:\n%s", id, p.Name, out)
	return 0
}

// syscallKill sends SIGKILL to process pid.
func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// cmdline is process pid's argv.
func cmdline(pid int) []string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return append(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), "")
}

// waitDescendant waits for a process under pid whose program is name.
func waitDescendant(t *testing.T, pid int, name string) int {
	t.Helper()
	var found int
	require.Eventually(t, func() bool {
		found = descendant(pid, name)
		return found != 0
	}, 30*time.Second, 50*time.Millisecond, "a %s process under pid %d", name, pid)
	return found
}

// descendant is a process under pid whose program is name (0: none).
// Each thread has its own children: a Go program's may be any of them.
func descendant(pid int, name string) int {
	threads, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	var children []string
	for _, th := range threads {
		b, _ := os.ReadFile(th)
		children = append(children, strings.Fields(string(b))...)
	}
	for _, f := range children {
		child, _ := strconv.Atoi(f)
		if filepath.Base(cmdline(child)[0]) == name {
			return child
		}
		if d := descendant(child, name); d != 0 {
			return d
		}
	}
	return 0
}
