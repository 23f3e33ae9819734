package k8stest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The real node's kubelet, bridge, node IP and /kubepods cgroups are the
// machine's: one real node at a time per machine, across test binaries.
// The lock is an flock on realNodeLockFile, held until teardown and let go
// by the kernel when the holder dies; realNodeStateFile records what setup
// changed, so the next holder can undo what a killed run left.
var (
	realNodeLockFile  = "/run/lock/atom-realnode.lock"
	realNodeStateFile = "/run/lock/atom-realnode.json"
)

// machineLock takes the real-node lock, waiting (and saying once who
// holds it) until ctx ends.
func machineLock(ctx context.Context, logf func(string, ...any)) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(realNodeLockFile), 0o755); err != nil {
		return nil, err
	}
	// Opened without O_TRUNC: the holder's pid stays readable. Go opens
	// files close-on-exec, so containerd, its shims and the kubelet never
	// hold the lock.
	f, err := os.OpenFile(realNodeLockFile, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the real-node lock %s: %w", realNodeLockFile, err)
	}
	start, said := time.Now(), false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", realNodeLockFile, err)
		}
		if !said {
			b, _ := os.ReadFile(realNodeLockFile)
			logf("real node: waiting for the machine's real-node lock %s, held by %s (another test's real node: one per machine)",
				realNodeLockFile, describePID(strings.TrimSpace(string(b))))
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waited %s for the real-node lock %s (another test's real node holds it; one per machine): %w",
				time.Since(start).Round(time.Second), realNodeLockFile, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	if said {
		logf("real node: got the lock after %.1fs", time.Since(start).Seconds())
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// describePID names process pid for a message.
func describePID(pid string) string {
	if pid == "" {
		return "an unknown process"
	}
	cmd, err := os.ReadFile("/proc/" + pid + "/cmdline")
	if err != nil {
		return "pid " + pid
	}
	return fmt.Sprintf("pid %s (%.120s)", pid, strings.ReplaceAll(string(cmd), "\x00", " "))
}

// unlockMachine lets the lock go.
func unlockMachine(f *os.File) {
	if f == nil {
		return
	}
	_ = f.Truncate(0)
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}

// hostState is what a real node's setup found and changed on the machine,
// in realNodeStateFile while it runs.
type hostState struct {
	PID     int       `json:"pid"`
	Dir     string    `json:"dir"`
	Started time.Time `json:"started"`
	// Sysctls are the values before setup of those the bridge plugin and
	// the kubelet change (ip_forward, the kubelet's kernel tunables).
	Sysctls map[string]string `json:"sysctls"`
	// LoAddr: setup added RealNodeIP to lo.
	LoAddr bool `json:"loAddr"`
	// Created are machine paths that did not exist before setup
	// (/var/lib/kubelet, /var/log/containers, ...).
	Created []string `json:"created"`
	// Chains are the iptables chains before setup, by "iptables/TABLE".
	Chains map[string][]string `json:"chains"`
}

func readHostState() (*hostState, error) {
	b, err := os.ReadFile(realNodeStateFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s hostState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read %s: %w (delete it once the machine is clean)", realNodeStateFile, err)
	}
	return &s, nil
}

func (s *hostState) write() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := realNodeStateFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, realNodeStateFile)
}
