package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hcLogger adapts an slog.Logger to the hclog.Logger that Raft wants, so
// Raft's logs go where the server's go, as structured records.
type hcLogger struct {
	l    *slog.Logger
	name string
	args []any
}

var _ hclog.Logger = (*hcLogger)(nil)

func newHCLogger(l *slog.Logger, name string) *hcLogger { return &hcLogger{l: l, name: name} }

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.Off {
		return
	}
	h.l.Log(context.Background(), slogLevel(level), msg, formatArgs(args)...)
}

// formatArgs renders hclog's deferred formats (hclog.Fmt, which Raft uses
// for its server lists) as hclog would: slog printed them as
// "[%+v [{Suffrage:Voter ...}]]".
func formatArgs(args []any) []any {
	var out []any
	for i, a := range args {
		f, ok := a.(hclog.Format)
		if !ok || len(f) == 0 {
			continue
		}
		format, ok := f[0].(string)
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = fmt.Sprintf(format, f[1:]...)
	}
	if out == nil {
		return args
	}
	return out
}

func (h *hcLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hcLogger) enabled(l hclog.Level) bool {
	return h.l.Enabled(context.Background(), slogLevel(l))
}

func (h *hcLogger) IsTrace() bool { return h.enabled(hclog.Trace) }
func (h *hcLogger) IsDebug() bool { return h.enabled(hclog.Debug) }
func (h *hcLogger) IsInfo() bool  { return h.enabled(hclog.Info) }
func (h *hcLogger) IsWarn() bool  { return h.enabled(hclog.Warn) }
func (h *hcLogger) IsError() bool { return h.enabled(hclog.Error) }

func (h *hcLogger) ImpliedArgs() []any { return h.args }

func (h *hcLogger) With(args ...any) hclog.Logger {
	return &hcLogger{l: h.l.With(args...), name: h.name, args: append(append([]any(nil), h.args...), args...)}
}

func (h *hcLogger) Name() string { return h.name }

func (h *hcLogger) Named(name string) hclog.Logger {
	n := name
	if h.name != "" {
		n = h.name + "." + name
	}
	return &hcLogger{l: h.l.With("logger", n), name: n, args: h.args}
}

func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	return &hcLogger{l: h.l.With("logger", name), name: name, args: h.args}
}

// SetLevel is a no-op: the slog handler decides what is logged.
func (h *hcLogger) SetLevel(hclog.Level) {}

func (h *hcLogger) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if h.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

func (h *hcLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hcLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer { return lineWriter{h} }

// lineWriter logs each write as one Info record.
type lineWriter struct{ h *hcLogger }

func (w lineWriter) Write(p []byte) (int, error) {
	w.h.Info(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}
