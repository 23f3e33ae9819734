// Package testnet hands out loopback ports to the suites that start real
// servers as processes (test/demo, test/chaos).
package testnet

import (
	"errors"
	"net"
	"sync"
)

// handedOut are the ports FreePort gave: the kernel may offer a port
// again once its listener is closed, and two servers given one port
// cannot both start (found when the demo's s2 and s3 got the same one).
var handedOut = struct {
	sync.Mutex
	ports map[string]bool
}{ports: map[string]bool{}}

// FreePort returns a loopback address (127.0.0.1:port) free now and never
// returned before by this process.
func FreePort() (string, error) {
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := ln.Addr().String()
		ln.Close()
		handedOut.Lock()
		seen := handedOut.ports[addr]
		handedOut.ports[addr] = true
		handedOut.Unlock()
		if !seen {
			return addr, nil
		}
	}
	return "", errors.New("no new free port on 127.0.0.1")
}
