// Package testbin builds atom's programs for the test packages that run
// them as a user would (coordinator and atom side by side in one
// directory, where coordinator finds atom).
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main builds coordinator and atom, and the extra programs (file name to
// package path below the module), into a new temporary directory, sets
// *dir to it, runs m's tests, removes the directory and exits with the
// tests' status. Call it from TestMain.
func Main(m *testing.M, dir *string, extra map[string]string) {
	d, err := os.MkdirTemp("", "atom-bin-")
	if err != nil {
		panic(err)
	}
	progs := map[string]string{"coordinator": "coordinator", "atom": "atom"}
	for name, pkg := range extra {
		progs[name] = pkg
	}
	for name, pkg := range progs {
		out, err := exec.Command("go", "build", "-o", filepath.Join(d, name), "github.com/atom-sched/atom/"+pkg).CombinedOutput()
		if err != nil {
			os.RemoveAll(d)
			panic(fmt.Sprintf("build %s: %v\n%s", pkg, err, out))
		}
	}
	*dir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}
