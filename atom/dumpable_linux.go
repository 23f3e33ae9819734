package main

import "syscall"

// undumpable makes atom's own /proc files (environ, mem) unreadable to
// its job and lets the job not ptrace it, though both run as one user:
// the allocation token in atom's environment stays atom's. The job's
// processes are dumpable again after their exec, as usual.
func undumpable() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); e != 0 {
		return e
	}
	return nil
}
