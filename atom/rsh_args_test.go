package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRshArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		host string
		argv []string
	}{
		{[]string{"h", "orted", "-mca", "x"}, "h", []string{"orted", "-mca", "x"}},
		{[]string{"-x", "h", "cmd"}, "h", []string{"cmd"}},
		{[]string{"-l", "root", "-p22", "-o", "StrictHostKeyChecking=no", "-xT", "h", "cmd"}, "h", []string{"cmd"}},
		{[]string{"-tl", "root", "user@h", "cmd", "-l"}, "h", []string{"cmd", "-l"}},
		{[]string{"--", "-h", "cmd"}, "-h", []string{"cmd"}},
	} {
		host, argv, err := rshArgs(c.args)
		if assert.NoError(t, err, c.args) {
			assert.Equal(t, c.host, host, c.args)
			assert.Equal(t, c.argv, argv, c.args)
		}
	}
	for _, args := range [][]string{nil, {"-x"}, {"-l", "root"}, {"h"}} {
		_, _, err := rshArgs(args)
		assert.Error(t, err, args)
	}
}
