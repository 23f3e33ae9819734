package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/atom-sched/atom/atom/internal/report"
)

// noticeEnv names the file atom writes a preemption notice to.
const noticeEnv = "ATOM_PREEMPT_NOTICE_FILE"

// noticeFile returns the path of the job's preemption notice file: the
// one in ATOM_PREEMPT_NOTICE_FILE if set, else one in a directory atom
// makes (removed by done). The file exists only once a notice came.
func noticeFile() (path string, done func(), err error) {
	if p := os.Getenv(noticeEnv); p != "" {
		return p, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "atom-notice-")
	if err != nil {
		return "", nil, fmt.Errorf("make the preemption notice directory: %w", err)
	}
	return filepath.Join(dir, "preempt-notice"), func() { _ = os.RemoveAll(dir) }, nil
}

// deliverNotice tells the job it is preempted: the deadline (RFC 3339,
// one line) written to path, whole (through a rename), then the
// signal the job asked for, if any.
func deliverNotice(path string, n report.Notice, child process) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(n.Until.UTC().Format(time.RFC3339Nano)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write the preemption notice: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write the preemption notice: %w", err)
	}
	if n.Signal == "" {
		return nil
	}
	sig := unix.SignalNum(n.Signal)
	if sig == 0 {
		return fmt.Errorf("preemption notice signal %q is unknown", n.Signal)
	}
	return child.Signal(sig)
}
