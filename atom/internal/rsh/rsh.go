// Package rsh is atom's remote-launch agent for mpirun: every
// replica of an MPI job serves launch requests, and mpirun, run by the
// first replica with --mca plm_rsh_agent "atom rsh", starts its orted
// daemons through them, so images need no sshd.
//
// # Protocol (version 1)
//
//	POST /v1/launch
//	Authorization: Bearer <launch token of a task of the same job (structs.LaunchToken)>
//	Content-Type: application/json
//
//	{"argv": ["orted", "-mca", "ess", "\"env\"", ...], "env": {"K": "V"}, "dir": "/work"}
//
// As sshd does, the server joins argv with spaces and runs the line with
// /bin/sh -c (OpenMPI hands its agent a shell command line: quoted values,
// and "PATH=...; export PATH; ... orted" when mpirun ran by absolute
// path). env is added to the server's environment, dir is the working
// directory (default: the server's). Stdin is /dev/null.
//
// A request refused before the command starts gets a JSON body
// {"error": "..."}: 401 bad or missing token, 400 bad body, 503 the server
// is stopping, 500 the command could not be started. Otherwise the answer
// is 200 with Content-Type application/vnd.atom.rsh.v1, its header sent
// as soon as the command has started (a command may write nothing for
// hours), and a body of frames, each sent as soon as it is produced:
//
//	kind   1 byte: 1 stdout, 2 stderr, 3 exit
//	length 4 bytes, big-endian: payload bytes (at most 1 MiB)
//	payload
//
// The exit frame is the last; its payload is JSON {"exitCode": N} with N
// the status as a shell reports it (128+n when signal n killed the
// command), plus the signal's name ("signal": "killed") when one did. A body that ends
// without an exit frame means the connection was lost. When the client
// goes away (its connection closes), the command's process group gets
// SIGTERM and, after a grace period, SIGKILL: as when an ssh session dies.
package rsh

import (
	"encoding/binary"
	"fmt"
	"io"
)

// LaunchPath is the launch endpoint's path.
const LaunchPath = "/v1/launch"

// ContentType marks a frame stream.
const ContentType = "application/vnd.atom.rsh.v1"

// Request is the body of a launch request.
type Request struct {
	Argv []string          `json:"argv"`
	Env  map[string]string `json:"env,omitempty"`
	Dir  string            `json:"dir,omitempty"`
}

// Exit is the payload of the exit frame.
type Exit struct {
	ExitCode int    `json:"exitCode"`
	Signal   string `json:"signal,omitempty"` // the signal that killed the command, if one did
}

// Frame kinds.
const (
	FrameStdout byte = 1
	FrameStderr byte = 2
	FrameExit   byte = 3
)

// MaxFrame bounds a frame's payload.
const MaxFrame = 1 << 20

// writeFrame writes one frame.
func writeFrame(w io.Writer, kind byte, p []byte) error {
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(p)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(p)
	return err
}

// readFrame reads one frame; io.EOF means the stream ended between frames.
func readFrame(r io.Reader, buf []byte) (kind byte, p []byte, err error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("frame of %d bytes: at most %d are allowed", n, MaxFrame)
	}
	if int(n) > cap(buf) {
		buf = make([]byte, n)
	}
	p = buf[:n]
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, io.ErrUnexpectedEOF
	}
	return h[0], p, nil
}
