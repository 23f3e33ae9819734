package cli

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/coordinator/api/apitest"
	"github.com/atom-sched/atom/pkg/structs"
)

// job wait's exit status says how the wait ended: 0 reached, 1 the job
// ended otherwise, 2 usage, 3 timed out.
func TestJobWait(t *testing.T) {
	e := apitest.NewEnv(t, "")
	spec := file(t, `{kind: command, command: [true], name: batch, priority: low, resources: {cpu: "1", memory: 1Gi}}`)
	must(t, e, "u1", "job", "submit", "-f", spec)
	wait := func(args ...string) (string, int) {
		t.Helper()
		out, err := run(t, e, "u1", append([]string{"job", "wait", "--interval", "5ms"}, args...)...)
		if err != nil {
			out += err.Error()
		}
		return out, ExitCode(err)
	}

	out, code := wait("--for", "running", "--timeout", "50ms", "batch-00001")
	assert.Equal(t, exitTimedOut, code)
	assert.Equal(t, "job batch-00001 is not running after 50ms: it is Pending", out)

	// Placed now; the wait returns once its agent reports it running.
	e.Store.Schedule(t, apitest.T0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		out, code := wait("--for", "running", "batch-00001")
		assert.Equal(t, 0, code)
		assert.Equal(t, "job batch-00001 Running\n", out)
	}()
	e.Store.Report(t, "batch-00001-0-a0", structs.TaskRunning, apitest.T0)
	<-done

	out, code = wait("--for", "complete", "--timeout", "50ms", "batch-00001")
	assert.Equal(t, exitTimedOut, code)
	assert.Equal(t, "job batch-00001 is not complete after 50ms: it is Running", out)
	e.Store.Report(t, "batch-00001-0-a0", structs.TaskSucceeded, apitest.T0)
	for _, cond := range []string{"complete", "running"} {
		out, code = wait("--for", cond, "batch-00001")
		assert.Equal(t, 0, code, cond)
		assert.Equal(t, "job batch-00001 Succeeded\n", out, "a job that succeeded has run, too")
	}

	// Failed or cancelled: 1, with the reason.
	must(t, e, "u1", "job", "submit", "-f", spec)
	must(t, e, "u1", "job", "cancel", "batch-00002")
	out, code = wait("--for", "complete", "batch-00002")
	assert.Equal(t, exitEndedOtherwise, code)
	assert.Equal(t, "job batch-00002 cancelled, so it will not be complete", out)

	// Usage errors, and a job that does not exist.
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: service, command: [true], name: web, priority: low, resources: {cpu: "1", memory: 1Gi}}`))
	out, code = wait("--for", "complete", "web-00003")
	assert.Equal(t, 2, code)
	assert.Equal(t, "job web-00003 is a service: it runs until cancelled, so it never completes: wait --for running", out)
	out, code = wait("--for", "done", "web-00003")
	assert.Equal(t, 2, code)
	assert.Equal(t, `--for "done" is not allowed: use running or complete`, out)
	out, code = wait("--for", "running", "--timeout", "soon", "web-00003")
	assert.Equal(t, 2, code)
	assert.Equal(t, `invalid value "soon" for flag --timeout: a duration is a number with a unit, e.g. 5s, 10m or 1h30m (see coordinator job wait --help)`, out)
	out, code = wait("--for", "running", "--timeout", "-1m", "web-00003")
	assert.Equal(t, 2, code, "a negative timeout used to mean no limit, silently")
	assert.Equal(t, `--timeout -1m0s is not allowed: use 0 (wait for ever) or more, a duration such as 10m`, out)
	out, code = wait("web-00003")
	assert.Equal(t, 2, code)
	assert.Equal(t, `Required flag "for" not set`, out)
	out, code = wait("--for", "running", "nope")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "job nope not found")

	// -o json: the job, as job status prints it.
	out, code = wait("-o", "json", "--for", "complete", "batch-00001")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, `"state": "Succeeded"`)
}

// A coordinator that cannot be reached is not a job that failed: job wait
// says so once on stderr, goes on trying until --timeout, and exits 4;
// job submit exits 4 too, naming the request ID to retry with.
func TestWaitUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	cli := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		app := App()
		app.Writer, app.ErrWriter = &out, &errOut
		err := app.RunContext(context.Background(), append([]string{"coordinator", "--addr", addr, "--token", "t"}, args...))
		if err != nil {
			errOut.WriteString(err.Error())
		}
		return out.String(), errOut.String(), ExitCode(err)
	}
	start := time.Now()
	_, stderr, code := cli("job", "wait", "--interval", "10ms", "--for", "complete", "--timeout", "300ms", "batch-00001")
	assert.Equal(t, exitUnreachable, code, stderr)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "it tried until --timeout")
	assert.Equal(t, 1, strings.Count(stderr, "coordinator: cannot reach the coordinator at "+addr), "said once: %s", stderr)
	assert.Contains(t, stderr, "still waiting for job batch-00001, until it answers\n")
	assert.Contains(t, stderr, "wait for job batch-00001: could not reach the coordinator at "+addr+": ")

	// Without its own --timeout, a wait that never reached the
	// coordinator (a wrong address) gives up after the app's --timeout,
	// as any command does; it used to wait for ever.
	start = time.Now()
	_, stderr, code = cli("--timeout", "300ms", "job", "wait", "--interval", "10ms", "--for", "complete", "batch-00001")
	assert.Equal(t, exitUnreachable, code, stderr)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "it tried for the app's --timeout")
	assert.Contains(t, stderr, "wait for job batch-00001: could not reach the coordinator at "+addr+": ")

	_, stderr, code = cli("--timeout", "300ms", "job", "submit", "--request-id", "r-1", "-f", file(t, `{kind: command, command: [true], name: batch, resources: {cpu: "1", memory: 1Gi}}`))
	assert.Equal(t, exitUnreachable, code, stderr)
	assert.Contains(t, stderr, "(retry with --request-id r-1): could not reach the coordinator at "+addr+": ")
}

// job logs -f rides out a coordinator that cannot be reached as job wait
// does, for the app's --timeout, then exits 4 with job wait's message:
// following one task (--task) and waiting for the job's placement alike.
func TestLogsFollowUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	for _, args := range [][]string{{"--task", "batch-00001-0-a0"}, {}} {
		var out, errOut bytes.Buffer
		app := App()
		app.Writer, app.ErrWriter = &out, &errOut
		start := time.Now()
		err := app.RunContext(context.Background(), append(append([]string{"coordinator", "--addr", addr, "--token", "t", "--timeout", "300ms",
			"job", "logs", "-f", "--interval", "10ms"}, args...), "batch-00001"))
		assert.Equal(t, exitUnreachable, ExitCode(err), "%v %v", args, err)
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "it tried until --timeout")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "follow the output of job batch-00001: could not reach the coordinator at "+addr+": ")
		assert.Empty(t, out.String())
	}
}

// A service stays Running while its replicas crash and are placed again:
// job wait --for running holds only while as many replicas run as it
// starts with, and a wait that times out says how many do.
func TestWaitRunningServiceCountsReplicas(t *testing.T) {
	e := apitest.NewEnv(t, "")
	must(t, e, "u1", "job", "submit", "-f", file(t, `{kind: service, command: [serve], name: web, replicas: 2, priority: low, resources: {cpu: "1", memory: 1Gi}}`))
	wait := func(args ...string) (string, int) {
		t.Helper()
		out, err := run(t, e, "u1", append([]string{"job", "wait", "--interval", "5ms", "--for", "running"}, args...)...)
		if err != nil {
			out += err.Error()
		}
		return out, ExitCode(err)
	}
	e.Store.Schedule(t, apitest.T0)
	e.Store.Report(t, "web-00001-0-a0", structs.TaskRunning, apitest.T0)
	e.Store.Report(t, "web-00001-1-a0", structs.TaskRunning, apitest.T0)
	out, code := wait("web-00001")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, "job web-00001 Running\n", out)

	for _, id := range []structs.TaskID{"web-00001-0-a0", "web-00001-1-a0"} {
		e.Store.Report(t, id, structs.TaskFailed, apitest.T0.Add(time.Second))
	}
	out, code = wait("--timeout", "50ms", "web-00001")
	assert.Equal(t, exitTimedOut, code, out)
	assert.Regexp(t, `^job web-00001 is not running after 50ms: it is Running, 0 of 2 replicas running: replica \d failed`, out)
}
