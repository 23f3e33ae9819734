package local

import (
	"os"
	"path/filepath"
	"strconv"
)

// inDir reports whether process pid works in dir, and is not a zombie
// (whose working directory cannot be read).
func inDir(pid int, dir string) bool {
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return cwd == dir
}
