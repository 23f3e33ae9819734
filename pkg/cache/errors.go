package cache

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// UnavailableError is what an operation returns when Redis stayed
// unreachable (refused, timed out, reset) for the whole bound. It is
// ErrUnavailable (errors.Is) and says the last network error seen.
type UnavailableError struct {
	Addr  string        // the Redis server
	Doing string        // the operation, in words: "reading file data"
	For   time.Duration // how long it was tried
	Cause error         // the last network error; nil when Redis just did not reply
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("redis %s %s for %s while %s: %s", e.Addr, ErrUnavailable, e.For, e.Doing, cause(e.Cause))
}

// Is makes errors.Is(err, ErrUnavailable) hold. Cause is not unwrapped:
// its errno (ECONNREFUSED) is the network's, and a caller mapping errors
// to errno (the FUSE mount) must see EIO, not a file system error.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// cause says what a network error means to a user: "connection
// refused", "no such host", without the addresses around it.
func cause(err error) string {
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return "no reply"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
		var sc *os.SyscallError
		if errors.As(err, &sc) {
			err = sc.Err
		}
	}
	return err.Error()
}

// doing words an operation on p (a path, or "#ino" for an inode the
// caller knows by path) for an error message.
func doing(op, p string) string {
	if strings.HasPrefix(p, "#") {
		p = "a file"
		if op == "readdir" {
			p = "a directory"
		}
	}
	switch op {
	case "init":
		return "checking the cache's layout"
	case "read":
		if p == "a file" {
			return "reading file data"
		}
		return "reading " + p
	case "write":
		if p == "a file" {
			return "writing file data"
		}
		return "writing " + p
	case "stat", "open":
		return "looking up " + p
	case "readdir":
		return "listing " + p
	case "create":
		return "creating " + p
	case "mkdir":
		return "making directory " + p
	case "unlink", "rmdir":
		return "removing " + p
	case "rename":
		return "renaming " + p
	case "truncate":
		return "truncating " + p
	case "chmod", "utimens":
		return "setting the attributes of " + p
	case "mark":
		return "marking dataset " + p + " complete"
	case "lease":
		return "taking or renewing the write lease of " + strings.TrimPrefix(p, "atom:lease:")
	}
	return op + " " + p
}
