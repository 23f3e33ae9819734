package rsh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Starter starts a command and sends its wait status once it exits; the
// command must not be waited for by anyone else. *reap.Reaper is one: use
// it when atom reaps orphans, so the reaper never steals a status.
type Starter interface {
	Start(cmd *exec.Cmd) (<-chan syscall.WaitStatus, error)
}

// Config configures a Server.
type Config struct {
	// Verify accepts or refuses a request's bearer token; its error is
	// shown to the client. Required.
	Verify func(ctx context.Context, token string) error
	// Starter starts commands; nil uses os/exec.
	Starter Starter
	// Env is the launched commands' base environment; nil is the server's.
	Env []string
	// Grace is SIGTERM to SIGKILL when a client goes away (default 5 s).
	Grace time.Duration
	// Drain is how long output is still read after the command exited,
	// while a background process holds its pipes (default 2 s).
	Drain time.Duration
	// Log gets the server's warnings; nil discards them.
	Log *slog.Logger
}

// Server serves launch requests. Launched commands are children of this
// process, each in its own process group.
type Server struct {
	cfg  Config
	http *http.Server
	ln   net.Listener

	mu       sync.Mutex // guards the fields below
	running  map[*proc]struct{}
	launched int
	code     int  // first non-zero exit status, else 0
	codeGone bool // that command was stopped because its client went away
	stopping bool // Stop was called: refuse new launches
	done     chan struct{}
	idle     chan struct{} // closed and replaced whenever running empties
}

// New returns a server; Listen starts it.
func New(cfg Config) *Server {
	if cfg.Grace <= 0 {
		cfg.Grace = 5 * time.Second
	}
	if cfg.Drain <= 0 {
		cfg.Drain = 2 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Starter == nil {
		cfg.Starter = execStarter{}
	}
	s := &Server{cfg: cfg, running: map[*proc]struct{}{}, done: make(chan struct{}), idle: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+LaunchPath, s.launch)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Handler is the server's HTTP handler (for tests and custom listeners).
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Listen listens on addr ("host:port"; port 0 picks one) and serves in the
// background until Close.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("rsh: listen on %s: %w", addr, err)
	}
	s.ln = ln
	go func() { _ = s.http.Serve(ln) }()
	return nil
}

// Addr is the address Listen listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Done is closed once at least one command was launched and every
// launched command has ended (the first time that happens).
func (s *Server) Done() <-chan struct{} { return s.done }

// ExitCode is the first non-zero exit status of an ended command, else 0.
func (s *Server) ExitCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code
}

// ClientGone reports whether the command whose status ExitCode is was
// stopped because its client went away before it ended (for mpirun's
// orted: mpirun, or its atom rsh, ended or lost the connection).
func (s *Server) ClientGone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codeGone
}

// Launched counts the commands started so far.
func (s *Server) Launched() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.launched
}

// Stop refuses new launches, sends SIGTERM to every running command's
// process group and SIGKILL after grace, and returns once all have ended.
func (s *Server) Stop(grace time.Duration) {
	s.mu.Lock()
	s.stopping = true
	ps := make([]*proc, 0, len(s.running))
	for p := range s.running {
		ps = append(ps, p)
	}
	idle := s.idle
	if len(ps) == 0 {
		idle = nil
	}
	s.mu.Unlock()
	for _, p := range ps {
		go p.kill(grace)
	}
	if idle != nil {
		<-idle
	}
}

// Close stops serving and closes every connection, so running commands
// are killed as for clients that went away.
func (s *Server) Close() error { return s.http.Close() }

func (s *Server) launch(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		httpError(w, http.StatusUnauthorized, "no token: atom rsh sends Authorization: Bearer $ATOM_TOKEN, the launch token atom gives each task of this job")
		return
	}
	if err := s.cfg.Verify(r.Context(), tok); err != nil {
		httpError(w, http.StatusUnauthorized, "launch refused: "+err.Error())
		return
	}
	var req Request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxFrame))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "bad launch request: "+err.Error())
		return
	}
	if len(req.Argv) == 0 {
		httpError(w, http.StatusBadRequest, "bad launch request: argv is empty: name the command to run")
		return
	}
	if req.Dir != "" {
		if fi, err := os.Stat(req.Dir); err != nil || !fi.IsDir() {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("bad launch request: dir %q is not a directory here", req.Dir))
			return
		}
	}
	p, err := s.start(req)
	if err != nil {
		httpError(w, statusOf(err), err.Error())
		return
	}
	defer s.ended(p)
	// The header goes out now that the command runs, not with its first
	// output: Open MPI's orted writes none until it ends, and a client
	// waiting for the header would wait for the whole job.
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(http.StatusOK)
	fw := &frameWriter{w: w, rc: http.NewResponseController(w)}
	fw.err = fw.rc.Flush()
	p.stream(r.Context(), fw, s.cfg.Grace, s.cfg.Drain)
}

var errStopping = errors.New("the task is stopping: no new commands are launched")

func statusOf(err error) int {
	if errors.Is(err, errStopping) {
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// start starts req's command and registers it.
func (s *Server) start(req Request) (*proc, error) {
	env := s.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string(nil), env...)
	for k, v := range req.Env {
		env = append(env, k+"="+v) // a later duplicate wins in os/exec
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, errStopping
	}
	p, err := startProc(s.cfg.Starter, strings.Join(req.Argv, " "), env, req.Dir)
	if err != nil {
		return nil, err
	}
	s.running[p] = struct{}{}
	s.launched++
	return p, nil
}

// ended records p's end.
func (s *Server) ended(p *proc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, p)
	if c := p.exit.ExitCode; c != 0 && s.code == 0 {
		s.code, s.codeGone = c, p.clientGone
	}
	if len(s.running) == 0 {
		close(s.idle)
		s.idle = make(chan struct{})
		select {
		case <-s.done:
		default:
			close(s.done)
		}
	}
}

func httpError(w http.ResponseWriter, status int, msg string) {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// frameWriter writes frames to an HTTP response, one at a time, flushing
// each. After a write fails it fails every later write.
type frameWriter struct {
	mu  sync.Mutex
	w   io.Writer
	rc  *http.ResponseController
	err error
}

func (f *frameWriter) frame(kind byte, p []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		if f.err = writeFrame(f.w, kind, p); f.err == nil {
			f.err = f.rc.Flush()
		}
	}
	return f.err
}

// execStarter starts commands with os/exec and waits for them itself.
type execStarter struct{}

func (execStarter) Start(cmd *exec.Cmd) (<-chan syscall.WaitStatus, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := make(chan syscall.WaitStatus, 1)
	go func() {
		_ = cmd.Wait() // stdout and stderr are *os.File: Wait copies nothing
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		c <- ws
	}()
	return c, nil
}
