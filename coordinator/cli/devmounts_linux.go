package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/moby/sys/mountinfo"
)

// mountsUnder returns the mount points at dir or below it that this
// process's mount table lists, the deepest (and, on one point, the
// latest) first: the order to unmount them in. It finds none when the
// table cannot be read.
func mountsUnder(dir string) []string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil
	}
	return unmountOrder(infos)
}

// unmountOrder returns the mount points of infos, listed in mount table
// order, deepest first and, on one point, the latest first.
func unmountOrder(infos []*mountinfo.Info) []string {
	var points []string
	for _, m := range infos {
		points = append(points, m.Mountpoint)
	}
	slices.Reverse(points) // a later mount first: it may sit on an earlier one
	slices.SortStableFunc(points, func(a, b string) int {
		return strings.Count(b, "/") - strings.Count(a, "/")
	})
	return points
}

// unmount detaches the mount at p.
func unmount(p string) error { return syscall.Unmount(p, syscall.MNT_DETACH) }
