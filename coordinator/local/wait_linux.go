package local

import (
	"errors"
	"syscall"
	"unsafe"
)

// pPID is waitid's P_PID: wait for the one process named by id.
const pPID = 1

// waitExited blocks until process pid has exited, without reaping it: the
// zombie keeps its PID, and so its process group ID, until cmd.Wait.
func waitExited(pid int) error {
	var info [16]uint64 // siginfo_t is 128 bytes
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch {
		case errno == 0:
			return nil
		case errors.Is(errno, syscall.EINTR):
			continue
		default:
			return errno
		}
	}
}
