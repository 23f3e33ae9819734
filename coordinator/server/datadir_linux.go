package server

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockHolder returns the process ID holding a lock on path, from
// /proc/locks (lines like "1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0
// EOF", device numbers in hex); 0 when none is found.
func lockHolder(path string) int {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0
	}
	dev := uint64(st.Dev) //nolint:unconvert // its type differs by architecture
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// "->" marks a waiter (the process asking), not a holder.
		if len(fields) < 6 || fields[1] == "->" || fields[5] != want {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && pid != os.Getpid() {
			return pid
		}
	}
	return 0
}
