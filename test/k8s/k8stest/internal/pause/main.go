// Command pause is the sandbox ("pause") container of the harness's real
// node (k8stest.AddRealNode): it holds a Pod's namespaces, reaps the
// children it inherits (shared process namespaces) and exits 0 on SIGTERM
// or SIGINT. The harness builds it statically and packs it into an OCI
// image, as no registry is reachable from the test machines.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
