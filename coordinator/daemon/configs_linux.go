package daemon

import "syscall"

// mountReadOnly bind-mounts root on itself read-only, so that even a
// task running as root cannot change its configs. Without the privilege
// to mount (a coordinator not run as root) the files' modes are what
// keeps them read-only.
func mountReadOnly(root string) {
	if err := syscall.Mount(root, root, "", syscall.MS_BIND, ""); err != nil {
		return
	}
	if err := syscall.Mount("", root, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		_ = syscall.Unmount(root, syscall.MNT_DETACH)
	}
}

// unmountConfigs undoes mountReadOnly, if it mounted root.
func unmountConfigs(root string) { _ = syscall.Unmount(root, syscall.MNT_DETACH) }
