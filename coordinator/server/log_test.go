package server

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
)

// TestRaftFormatsRendered: Raft logs its servers with hclog.Fmt; they
// read "[%+v [{Suffrage:Voter ...}]]" in every server's log (found by a
// new user reading coordinator dev's first lines).
func TestRaftFormatsRendered(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})), "raft")
	type srv struct{ ID, Address string }
	l.Info("initial configuration", "index", 1, "servers", hclog.Fmt("%+v", []srv{{"s1", "127.0.0.1:7001"}}))
	assert.Equal(t, `level=INFO msg="initial configuration" index=1 servers="[{ID:s1 Address:127.0.0.1:7001}]"`+"\n", buf.String())
}
