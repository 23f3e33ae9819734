package cliusage

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/urfave/cli/v2"
)

// Only a duration flag's error is reworded, whichever of its names was
// given; other flags' errors pass as urfave words them, and subcommands
// get the handler too.
func TestDurationHint(t *testing.T) {
	const hint = "a duration is a number with a unit, e.g. 5s, 10m or 1h30m"
	cases := map[string]struct {
		env  map[string]string
		args []string
		want string
	}{
		"alias":         {args: []string{"--ival", "2"}, want: `invalid value "2" for flag --ival: ` + hint + ` (2s for 2 seconds)`},
		"decimal":       {args: []string{"--ival", "1.5"}, want: `invalid value "1.5" for flag --ival: ` + hint + ` (1.5s for 1.5 seconds)`},
		"exponent":      {args: []string{"--ival", "1e3"}, want: `invalid value "1e3" for flag --ival: ` + hint},
		"negative":      {args: []string{"--ival=-5"}, want: `invalid value "-5" for flag --ival: ` + hint},
		"signed":        {args: []string{"--ival", "+5"}, want: `invalid value "+5" for flag --ival: ` + hint},
		"too long":      {args: []string{"--ival", "9999999999999999999"}, want: `invalid value "9999999999999999999" for flag --ival: ` + hint},
		"variable":      {env: map[string]string{"T_WAIT": "later"}, args: nil, want: `invalid value "later" for $T_WAIT (flag --interval): ` + hint},
		"int flag":      {args: []string{"--count", "x"}, want: `invalid value "x" for flag -count: parse error`},
		"int variable":  {env: map[string]string{"T_COUNT": "x"}, want: `could not parse "x" as int value from environment variable "T_COUNT" for flag count: strconv.ParseInt: parsing "x": invalid syntax`},
		"unknown flag":  {args: []string{"--nope"}, want: `flag provided but not defined: -nope`},
		"good duration": {args: []string{"--interval", "2s"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			sub := &cli.Command{Name: "sub", Action: func(*cli.Context) error { return nil }, Flags: []cli.Flag{
				&cli.DurationFlag{Name: "interval", Aliases: []string{"ival"}, Value: time.Second, EnvVars: []string{"T_WAIT"}},
				&cli.IntFlag{Name: "count", EnvVars: []string{"T_COUNT"}},
			}}
			app := &cli.App{Name: "t", Writer: io.Discard, ErrWriter: io.Discard, Commands: []*cli.Command{{Name: "top", Subcommands: []*cli.Command{sub}}}}
			OnEveryCommand(app.Commands, func(c *cli.Context, err error, _ bool) error { return DurationHint(err, c.Command.Flags) })
			err := app.Run(append([]string{"t", "top", "sub"}, tc.args...))
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.want)
		})
	}
}
