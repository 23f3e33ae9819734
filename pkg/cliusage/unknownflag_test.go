package cliusage

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/urfave/cli/v2"
)

// A flag a command does not have is named as typed, with the command's
// flag it most looks like when one does; other errors pass unchanged.
func TestUnknownFlag(t *testing.T) {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "data-dir"},
		&cli.StringFlag{Name: "http-addr"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}},
	}
	for given, want := range map[string]string{
		"flag provided but not defined: -data":      "unknown flag --data: did you mean --data-dir?",
		"flag provided but not defined: -http_addr": "unknown flag --http_addr: did you mean --http-addr?",
		"flag provided but not defined: -outptu":    "unknown flag --outptu: did you mean --output?",
		"flag provided but not defined: -x":         "unknown flag -x",
		"flag provided but not defined: -banana":    "unknown flag --banana",
		`invalid value "x" for flag -o: bad`:        `invalid value "x" for flag -o: bad`,
	} {
		assert.EqualError(t, UnknownFlag(errors.New(given), flags), want, given)
	}
}
