package rsh_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/atom-sched/atom/atom/internal/rsh"
)

const good = "good-token"

func verify(_ context.Context, tok string) error {
	if tok != good {
		return errors.New("not an allocation token of this job")
	}
	return nil
}

func newServer(t *testing.T, cfg rsh.Config) *rsh.Server {
	t.Helper()
	if cfg.Verify == nil {
		cfg.Verify = verify
	}
	s := rsh.New(cfg)
	require.NoError(t, s.Listen("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// run runs line (one shell word list) on s and returns its output.
func run(t *testing.T, s *rsh.Server, argv ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code, err := rsh.Run(context.Background(), s.Addr(), good, argv, &o, &e)
	require.NoError(t, err)
	return code, o.String(), e.String()
}

func TestOutputAndExitCodes(t *testing.T) {
	t.Parallel()
	s := newServer(t, rsh.Config{})
	code, out, errOut := run(t, s, "echo", "out;", "echo err >&2;", "exit 3")
	assert.Equal(t, 3, code)
	assert.Equal(t, "out\n", out)
	assert.Equal(t, "err\n", errOut)

	for line, want := range map[string]int{"true": 0, "exit 7": 7, "kill -KILL $$": 137, "kill -TERM $$": 143, "no-such-command-here": 127} {
		code, _, _ := run(t, s, line)
		assert.Equal(t, want, code, line)
	}
	<-s.Done()
	assert.Equal(t, 3, s.ExitCode(), "the first non-zero status")
	assert.False(t, s.ClientGone())
	assert.Equal(t, 6, s.Launched())
}

// The words are joined and run by /bin/sh -c, as sshd does: OpenMPI's
// quoted values and "VAR=...; export VAR; orted" prefixes work.
func TestShellCommandLine(t *testing.T) {
	t.Parallel()
	s := newServer(t, rsh.Config{})
	_, out, _ := run(t, s, "  X=1 ; export X ;  ", "printf", "'[%s]'", `"env"`, `"a b"`, "$X")
	assert.Equal(t, "[env][a b][1]", out)
}

func TestEnvAndDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := newServer(t, rsh.Config{Env: []string{"PATH=" + os.Getenv("PATH"), "BASE=base", "OVER=server"}})
	var o bytes.Buffer
	code, err := rsh.Launch(context.Background(), s.Addr(), good, rsh.Request{
		Argv: []string{`echo "$BASE $OVER $HOME."; pwd`}, Env: map[string]string{"OVER": "request"}, Dir: dir,
	}, &o, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 0, code)
	assert.Equal(t, "base request .\n"+dir+"\n", o.String(), "only the configured environment, the request's over it")

	_, err = rsh.Launch(context.Background(), s.Addr(), good, rsh.Request{Argv: []string{"true"}, Dir: filepath.Join(dir, "nope")}, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "400 bad launch request: dir")
	_, err = rsh.Run(context.Background(), s.Addr(), good, nil, io.Discard, io.Discard)
	assert.ErrorContains(t, err, "argv is empty")
}

func TestAuthRefused(t *testing.T) {
	t.Parallel()
	s := newServer(t, rsh.Config{})
	_, err := rsh.Run(context.Background(), s.Addr(), "stolen", []string{"touch", "/tmp/should-not-exist"}, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Equal(t, "launch on "+s.Addr()+": 401 launch refused: not an allocation token of this job", err.Error())
	_, err = rsh.Run(context.Background(), s.Addr(), "", []string{"true"}, io.Discard, io.Discard)
	assert.ErrorContains(t, err, "401 no token: atom rsh sends Authorization: Bearer $ATOM_TOKEN")
	assert.Zero(t, s.Launched())
}

// lineWriter hands each complete line written to it to a channel.
type lineWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.WriteString(line)
			return len(p), nil
		}
		w.lines <- strings.TrimSuffix(line, "\n")
	}
}

// Output arrives as it is produced, not when the command ends.
func TestOutputStreams(t *testing.T) {
	t.Parallel()
	s := newServer(t, rsh.Config{})
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	out := &lineWriter{lines: make(chan string, 4)}
	res := make(chan int, 1)
	go func() {
		code, _ := rsh.Run(context.Background(), s.Addr(), good, []string{"echo first; cat " + fifo + "; echo last"}, out, io.Discard)
		res <- code
	}()
	assert.Equal(t, "first", <-out.lines)
	require.NoError(t, os.WriteFile(fifo, []byte("second\n"), 0o600)) // the command waits for this
	assert.Equal(t, "second", <-out.lines)
	assert.Equal(t, "last", <-out.lines)
	assert.Equal(t, 0, <-res)
}

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// startPids runs line, which prints pids one per line, and returns them
// once n have come, with the cancel that drops the connection.
func startPids(t *testing.T, s *rsh.Server, line string, n int) ([]int, context.CancelFunc, chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	out := &lineWriter{lines: make(chan string, n)}
	res := make(chan error, 1)
	go func() {
		_, err := rsh.Run(ctx, s.Addr(), good, []string{line}, out, io.Discard)
		res <- err
	}()
	var pids []int
	for range n {
		pid, err := strconv.Atoi(<-out.lines)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	return pids, cancel, res
}

// A client that goes away takes its command's whole process group with it.
func TestDisconnectKillsProcessGroup(t *testing.T) {
	t.Parallel()
	s := newServer(t, rsh.Config{Grace: time.Minute})
	pids, cancel, res := startPids(t, s, "sleep 1000 & echo $!; echo $$; wait", 2)
	for _, pid := range pids {
		require.True(t, alive(pid))
	}
	cancel()
	require.ErrorIs(t, <-res, context.Canceled)
	require.Eventually(t, func() bool { return !alive(pids[0]) && !alive(pids[1]) }, 10*time.Second, 10*time.Millisecond)
	<-s.Done()
	assert.Equal(t, 143, s.ExitCode(), "SIGTERM, well within the grace")
	assert.True(t, s.ClientGone())
}

// A command that ignores SIGTERM gets SIGKILL after the grace period.
func TestDisconnectKillsAfterGrace(t *testing.T) {
	t.Parallel()
	s := newServer(t, rsh.Config{Grace: 50 * time.Millisecond})
	pids, cancel, res := startPids(t, s, `trap "" TERM; echo $$; exec sleep 1000`, 1)
	cancel()
	require.Error(t, <-res)
	require.Eventually(t, func() bool { return !alive(pids[0]) }, 10*time.Second, 10*time.Millisecond)
	<-s.Done()
	assert.Equal(t, 137, s.ExitCode())
}

// Stop kills what runs and refuses new launches.
func TestStop(t *testing.T) {
	t.Parallel()
	s := newServer(t, rsh.Config{})
	pids, _, res := startPids(t, s, "echo $$; exec sleep 1000", 1)
	s.Stop(time.Minute)
	assert.False(t, alive(pids[0]))
	assert.NoError(t, <-res, "the client still gets the exit status")
	assert.Equal(t, 143, s.ExitCode())
	assert.False(t, s.ClientGone(), "stopped by the server, not for a client gone")
	_, err := rsh.Run(context.Background(), s.Addr(), good, []string{"true"}, io.Discard, io.Discard)
	assert.ErrorContains(t, err, "503 the task is stopping")
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	s := newServer(t, rsh.Config{})
	addr := s.Addr()
	require.NoError(t, s.Close())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := rsh.Run(ctx, addr, good, []string{"true"}, io.Discard, io.Discard)
	assert.ErrorContains(t, err, "launch on "+addr)
}

// A peer whose launch server is not listening yet (its container has just
// started) is tried again until it is: the command runs once.
func TestRefusedUntilListening(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	wasRefused := rsh.NotifyRefused(addr)
	out := filepath.Join(t.TempDir(), "ran")
	done := make(chan error, 1)
	go func() {
		var o bytes.Buffer
		code, err := rsh.Run(context.Background(), addr, good, []string{"echo x >> " + out + "; echo hi"}, &o, io.Discard)
		if err == nil && (code != 0 || o.String() != "hi\n") {
			err = fmt.Errorf("exit %d, output %q", code, o.String())
		}
		done <- err
	}()
	// The launch has been refused at least once before the server listens.
	select {
	case <-wasRefused:
	case err := <-done:
		t.Fatalf("launch ended before the server listened: %v", err)
	}
	s := rsh.New(rsh.Config{Verify: verify})
	require.NoError(t, s.Listen(addr))
	t.Cleanup(func() { _ = s.Close() })
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(rsh.RefusedWindow):
		t.Fatal("the launch never reached the server once it listened")
	}
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b), "the command ran once")
}

// The answer's header comes as soon as the command has started, before
// any output: Open MPI's orted writes nothing until the job ends, and its
// launcher must not wait that long to know the launch worked.
func TestHeaderBeforeOutput(t *testing.T) {
	t.Parallel()
	s := newServer(t, rsh.Config{Grace: 50 * time.Millisecond})
	req, err := http.NewRequest(http.MethodPost, "http://"+s.Addr()+rsh.LaunchPath, strings.NewReader(`{"argv": ["exec sleep 1000"]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+good)
	answered := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultTransport.RoundTrip(req)
		assert.NoError(t, err)
		answered <- resp
	}()
	select {
	case resp := <-answered:
		require.NotNil(t, resp)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, rsh.ContentType, resp.Header.Get("Content-Type"))
		assert.Equal(t, 1, s.Launched())
		require.NoError(t, resp.Body.Close()) // the client goes: the command is stopped
	case <-time.After(10 * time.Second):
		t.Fatal("no header while the command runs without output")
	}
	<-s.Done()
	assert.Equal(t, 143, s.ExitCode())
}

// With a bound on the wait for the header, a long command without output
// still runs to its end. Not parallel: the bound is the process's.
func TestHeaderTimeoutSilentCommand(t *testing.T) {
	s := newServer(t, rsh.Config{})
	rsh.SetHeaderTimeout(200 * time.Millisecond)
	t.Cleanup(func() { rsh.SetHeaderTimeout(0) })
	code, _, _ := run(t, s, "sleep 1; exit 4")
	assert.Equal(t, 4, code)
}
