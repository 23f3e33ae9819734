package plugin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/atom-sched/atom/pkg/plugin/plugindir"
)

// BinaryPrefix names external job-type plugins: atom-plugin-KIND in the
// plugin directory.
const BinaryPrefix = plugindir.Prefix

// Loader finds and starts job types for atom.
type Loader struct {
	// Catalog holds the built-ins.
	Catalog *Catalog
	// Dir holds external plugins (atom-plugin-KIND); "" looks nowhere.
	Dir string
	// Sums names the checksum file external plugins must match (see
	// SumsFile); when empty, Dir's SHA256SUMS is used if it exists.
	Sums string
	// Self is the command that serves a built-in out of process; the
	// kind is appended (atom: [/proc/self/exe plugin serve]). Empty runs
	// built-ins in-process.
	Self []string
	// Stderr receives the plugin processes' logs; os.Stderr when nil.
	Stderr io.Writer
	// StartTimeout bounds a plugin's start; the package's StartTimeout
	// when zero.
	StartTimeout time.Duration
}

// StartTimeout bounds a plugin's start (its handshake line).
const StartTimeout = 20 * time.Second

// Handle is an opened job type; Close stops its process.
type Handle struct {
	JobType
	API    string // the negotiated API version
	client *goplugin.Client
	cmd    *exec.Cmd
}

// Close stops the plugin process, if any, and whatever it started: the
// plugin runs in a process group of its own, killed whole.
func (h *Handle) Close() {
	if h.client != nil {
		// go-plugin's Kill stops the plugin gracefully, then waits for its
		// pipes to close, which a child the plugin left may hold open:
		// after a while, kill the whole group.
		done := make(chan struct{})
		go func() { h.client.Kill(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
		}
		killGroup(h.cmd)
		<-done
	}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// ExecutablePlugin reports whether path is an executable regular file.
func ExecutablePlugin(path string) bool { return plugindir.Executable(path) }

// ErrUnknownKind: no built-in or external plugin runs this kind.
var ErrUnknownKind = errors.New("unknown job kind")

// Open starts the job type for kind and negotiates its API version. An
// external plugin in Dir wins over a built-in of the same kind.
func (l *Loader) Open(ctx context.Context, kind string) (*Handle, error) {
	var cmd *exec.Cmd
	var secure *goplugin.SecureConfig
	if l.Dir != "" {
		if p := filepath.Join(l.Dir, BinaryPrefix+kind); ExecutablePlugin(p) {
			cmd = exec.Command(p)
			sums, from, err := l.sums()
			if err != nil {
				return nil, fmt.Errorf("plugin %s: %w", p, err)
			}
			if sums != nil {
				want, ok := sums[BinaryPrefix+kind]
				if !ok {
					return nil, fmt.Errorf("%w: plugin %s is not listed in %s: add its line (sha256sum %s%s) or remove the plugin", ErrChecksum, p, from, BinaryPrefix, kind)
				}
				secure = &goplugin.SecureConfig{Checksum: want, Hash: sha256.New()}
			}
		}
	}
	if cmd == nil {
		f, ok := l.Catalog.Lookup(kind)
		if !ok {
			return nil, fmt.Errorf("%w %q: atom runs %v and plugins named %s<kind> in %q", ErrUnknownKind, kind, l.Catalog.Kinds(), BinaryPrefix, l.Dir)
		}
		if len(l.Self) == 0 {
			return negotiate(ctx, &Handle{JobType: f()}, kind)
		}
		cmd = exec.Command(l.Self[0], append(l.Self[1:], kind)...)
	}
	stderr := l.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	// Its own process group, so Close reaches what it started, which may
	// hold the plugin's output pipes open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := l.StartTimeout
	if start == 0 {
		start = StartTimeout
	}
	c := goplugin.NewClient(&goplugin.ClientConfig{
		StartTimeout:     start,
		HandshakeConfig:  Handshake,
		Plugins:          goplugin.PluginSet{PluginName: &GRPCPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Stderr:           stderr,
		SecureConfig:     secure,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin." + kind, Output: stderr, Level: hclog.Warn}),
	})
	rpc, err := c.Client()
	if errors.Is(err, goplugin.ErrChecksumsDoNotMatch) { // checked right before exec: nothing started
		return nil, fmt.Errorf("%w: plugin %s does not match its checksum: expected sha256 %x, actual %s: reinstall the plugin or update its sum", ErrChecksum, cmd.Path, secure.Checksum, fileSum(cmd.Path))
	}
	if err != nil {
		killGroup(cmd) // first: go-plugin's Kill waits for the plugin's pipes to close
		c.Kill()
		return nil, fmt.Errorf("start plugin for kind %q (%s): %s", kind, cmd.Path, firstLine(err.Error()))
	}
	raw, err := rpc.Dispense(PluginName)
	if err != nil {
		killGroup(cmd) // first: go-plugin's Kill waits for the plugin's pipes to close
		c.Kill()
		return nil, fmt.Errorf("plugin for kind %q: %s", kind, firstLine(err.Error()))
	}
	return negotiate(ctx, &Handle{JobType: raw.(JobType), client: c, cmd: cmd}, kind)
}

func negotiate(ctx context.Context, h *Handle, kind string) (*Handle, error) {
	info, err := h.Info(ctx)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("plugin for kind %q: %w", kind, err)
	}
	if info.Kind != kind {
		h.Close()
		return nil, fmt.Errorf("plugin for kind %q says it runs kind %q: rename it %s%s", kind, info.Kind, BinaryPrefix, info.Kind)
	}
	if h.API, err = Negotiate(info); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// firstLine keeps go-plugin's long explanations out of a task's reason
// (the plugin's own stderr, in the task's log, has the details).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// Serve serves jt as a plugin process on stdin/stdout; it returns when
// the host is done with it. Plugin mains and `atom plugin serve` call it.
func Serve(jt JobType) {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         goplugin.PluginSet{PluginName: &GRPCPlugin{Impl: jt}},
		GRPCServer:      goplugin.DefaultGRPCServer,
		Logger:          hclog.New(&hclog.LoggerOptions{Output: os.Stderr, Level: hclog.Warn}),
	})
}
