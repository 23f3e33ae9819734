package cliusage

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"
)

// envApp is an app whose command sub (under top) has flags of each kind
// with variables, EnvAfterFlags applied; run returns what sub saw.
func envApp(out *bytes.Buffer) (*cli.App, *string) {
	seen := new(string)
	sub := &cli.Command{Name: "sub",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "wait", Aliases: []string{"w"}, Value: time.Second, EnvVars: []string{"T_WAIT"}},
			&cli.IntFlag{Name: "count", Value: 7, EnvVars: []string{"T_COUNT"}},
			&cli.BoolFlag{Name: "on", EnvVars: []string{"T_ON"}},
			&cli.StringFlag{Name: "host", Value: "dflt", EnvVars: []string{"T_HOST", "T_HOST2"}},
			&cli.StringFlag{Name: "plain", Value: "p"},
		},
		// Before sees the variables' values already.
		Before: func(c *cli.Context) error {
			if c.Int("count") == 13 {
				return fmt.Errorf("unlucky %s", Given(c, "count"))
			}
			return nil
		},
		Action: func(c *cli.Context) error {
			*seen = fmt.Sprintf("wait=%s count=%d on=%t host=%q plain=%s | %s %s %s %s | %s | %s",
				c.Duration("wait"), c.Int("count"), c.Bool("on"), c.String("host"), c.String("plain"),
				Source(c, "wait"), Source(c, "count"), Source(c, "host"), Source(c, "plain"),
				Given(c, "wait"), Given(c, "count"))
			return nil
		},
	}
	app := &cli.App{Name: "t", Writer: out, ErrWriter: out, Commands: []*cli.Command{{Name: "top", Subcommands: []*cli.Command{sub}}}}
	OnEveryCommand(app.Commands, func(c *cli.Context, err error, _ bool) error {
		return fmt.Errorf("%w (see %s --help)", DurationHint(err, c.Command.Flags), c.Command.HelpName)
	})
	EnvAfterFlags(app)
	return app, seen
}

// A flag on the command line wins over its variable, which is then not
// read; a variable is read for a flag not given, by the flag's own
// parser, and one it cannot parse is a usage error naming it, its value,
// its flag and what the flag takes.
func TestEnvAfterFlags(t *testing.T) {
	const all = "--wait=3s --count=4 --on=false --host=h"
	cases := map[string]struct {
		env  map[string]string
		args string
		want string // what sub saw, or the error
	}{
		"defaults": {want: `wait=1s count=7 on=false host="dflt" plain=p | T_WAIT T_COUNT T_HOST --plain | --wait 1s | --count 7`},
		"flags over bad variables": {env: map[string]string{"T_WAIT": "banana", "T_COUNT": "x", "T_ON": "maybe", "T_HOST": "e"}, args: all,
			want: `wait=3s count=4 on=false host="h" plain=p | --wait --count --host --plain | --wait 3s | --count 4`},
		"alias over variable": {env: map[string]string{"T_WAIT": "banana"}, args: "-w 2s",
			want: `wait=2s count=7 on=false host="dflt" plain=p | --wait T_COUNT T_HOST --plain | --wait 2s | --count 7`},
		"variables": {env: map[string]string{"T_WAIT": "90s", "T_COUNT": "0x10", "T_ON": "1", "T_HOST": "e", "T_HOST2": "e2"},
			want: `wait=1m30s count=16 on=true host="e" plain=p | T_WAIT T_COUNT T_HOST --plain | T_WAIT=90s (flag --wait) | T_COUNT=0x10 (flag --count)`},
		"second variable": {env: map[string]string{"T_HOST2": "e2"},
			want: `wait=1s count=7 on=false host="e2" plain=p | T_WAIT T_COUNT T_HOST2 --plain | --wait 1s | --count 7`},
		"empty variables": {env: map[string]string{"T_WAIT": "", "T_COUNT": "", "T_ON": "", "T_HOST": "", "T_HOST2": "e2"},
			want: `wait=1s count=7 on=false host="" plain=p | T_WAIT T_COUNT T_HOST --plain | --wait 1s | --count 7`},
		"bad duration": {env: map[string]string{"T_WAIT": "5"},
			want: `invalid value "5" for $T_WAIT (flag --wait): a duration is a number with a unit, e.g. 5s, 10m or 1h30m (5s for 5 seconds) (see t top sub --help)`},
		"bad int": {env: map[string]string{"T_COUNT": "1.5"},
			want: `invalid value "1.5" for $T_COUNT (flag --count): a whole number, e.g. 3 (see t top sub --help)`},
		"bad bool": {env: map[string]string{"T_ON": "yes"},
			want: `invalid value "yes" for $T_ON (flag --on): true or false (see t top sub --help)`},
		"refused in Before": {env: map[string]string{"T_COUNT": "13"}, want: `unlucky T_COUNT=13 (flag --count)`},
		"bad flag":          {args: "--wait 5", want: `invalid value "5" for flag --wait: a duration is a number with a unit, e.g. 5s, 10m or 1h30m (5s for 5 seconds) (see t top sub --help)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out bytes.Buffer
			app, seen := envApp(&out)
			err := app.Run(append([]string{"t", "top", "sub"}, strings.Fields(tc.args)...))
			if err != nil {
				assert.EqualError(t, err, tc.want)
				return
			}
			assert.Equal(t, tc.want, *seen)
		})
	}
}

// Help lists each flag's variables as urfave does, and --help shows it
// whatever the variables hold.
func TestEnvAfterFlagsHelp(t *testing.T) {
	t.Setenv("T_WAIT", "banana")
	var out bytes.Buffer
	app, _ := envApp(&out)
	require.NoError(t, app.Run([]string{"t", "top", "sub", "--help"}))
	assert.Contains(t, out.String(), "--wait value, -w value  (default: 1s) [$T_WAIT]")
	assert.Contains(t, out.String(), `(default: "dflt") [$T_HOST, $T_HOST2]`)
}

// A required flag is there when its variable is set, and missing when
// neither it nor its variable is given.
func TestEnvAfterFlagsRequired(t *testing.T) {
	run := func() error {
		var got string
		cmd := &cli.Command{Name: "c", Flags: []cli.Flag{&cli.StringFlag{Name: "id", Required: true, EnvVars: []string{"T_ID"}}},
			Action: func(c *cli.Context) error { got = c.String("id"); return nil }}
		var out bytes.Buffer
		app := &cli.App{Name: "t", Writer: &out, ErrWriter: &out, Commands: []*cli.Command{cmd}}
		EnvAfterFlags(app)
		err := app.Run([]string{"t", "c"})
		if err == nil && got != "x" {
			return fmt.Errorf("got %q", got)
		}
		return err
	}
	assert.EqualError(t, run(), `Required flag "id" not set`)
	t.Setenv("T_ID", "x")
	assert.NoError(t, run())
}

// Commands sharing one slice of flags each read the variables.
func TestEnvAfterFlagsShared(t *testing.T) {
	t.Setenv("T_HOST", "e")
	flags := []cli.Flag{&cli.StringFlag{Name: "host", EnvVars: []string{"T_HOST"}}}
	var got []string
	action := func(c *cli.Context) error { got = append(got, c.String("host")+" from "+Source(c, "host")); return nil }
	app := &cli.App{Name: "t", Commands: []*cli.Command{{Name: "a", Flags: flags, Action: action}, {Name: "b", Flags: flags, Action: action}}}
	EnvAfterFlags(app)
	EnvAfterFlags(app) // again: nothing changes
	require.NoError(t, app.Run([]string{"t", "a"}))
	require.NoError(t, app.Run([]string{"t", "b", "--host", "h"}))
	require.NoError(t, app.Run([]string{"t", "b"}))
	assert.Equal(t, []string{"e from T_HOST", "h from --host", "e from T_HOST"}, got)
}

// The app's own flags (given before the command) are read as a
// command's: a flag wins over its variable, a variable is read for a
// flag not given, before the app's Before, and one that cannot be parsed
// is a usage error of the app. A command's flag of the same name hides
// the app's for Source and Given.
func TestEnvAfterFlagsApp(t *testing.T) {
	cases := map[string]struct {
		env  map[string]string
		args string
		want string // what the command saw, or the error
	}{
		"default":         {args: "get", want: "30s from T_TIMEOUT, --timeout 30s"},
		"flag over bad":   {env: map[string]string{"T_TIMEOUT": "banana"}, args: "--timeout 2s get", want: "2s from --timeout, --timeout 2s"},
		"variable":        {env: map[string]string{"T_TIMEOUT": "3s"}, args: "get", want: "3s from T_TIMEOUT, T_TIMEOUT=3s (flag --timeout)"},
		"command's own":   {env: map[string]string{"T_TIMEOUT": "3s"}, args: "wait --timeout 5s", want: "5s from --timeout, --timeout 5s"},
		"bad variable":    {env: map[string]string{"T_TIMEOUT": "banana"}, args: "get", want: `invalid value "banana" for $T_TIMEOUT (flag --timeout): a duration is a number with a unit, e.g. 5s, 10m or 1h30m (see t --help)`},
		"refused, Before": {env: map[string]string{"T_TIMEOUT": "-1s"}, args: "get", want: "T_TIMEOUT=-1s (flag --timeout): use 0 or more"},
		"refused flag":    {env: map[string]string{"T_TIMEOUT": "1s"}, args: "--timeout=-2s get", want: "--timeout -2s: use 0 or more"},
		"app's help":      {env: map[string]string{"T_TIMEOUT": "banana"}, args: "--help", want: ""}, // runs no command
		"command's help":  {env: map[string]string{"T_TIMEOUT": "banana"}, args: "get --help", want: ""},
		"help command":    {env: map[string]string{"T_TIMEOUT": "banana"}, args: "help get", want: ""},
		"-- then -h":      {env: map[string]string{"T_TIMEOUT": "banana"}, args: "get -- -h", want: `invalid value "banana" for $T_TIMEOUT (flag --timeout): a duration is a number with a unit, e.g. 5s, 10m or 1h30m (see t --help)`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var seen string
			action := func(c *cli.Context) error {
				seen = fmt.Sprintf("%s from %s, %s", c.Duration("timeout"), Source(c, "timeout"), Given(c, "timeout"))
				return nil
			}
			var out bytes.Buffer
			app := &cli.App{Name: "t", Writer: &out, ErrWriter: &out,
				Flags: []cli.Flag{&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, EnvVars: []string{"T_TIMEOUT"}}},
				Before: func(c *cli.Context) error {
					if c.Duration("timeout") < 0 {
						return fmt.Errorf("%s: use 0 or more", Given(c, "timeout"))
					}
					return nil
				},
				Commands: []*cli.Command{{Name: "get", Action: action},
					{Name: "wait", Flags: []cli.Flag{&cli.DurationFlag{Name: "timeout"}}, Action: action}},
				OnUsageError: func(_ *cli.Context, err error, _ bool) error { return fmt.Errorf("%w (see t --help)", err) },
			}
			EnvAfterFlags(app)
			err := app.Run(append([]string{"t"}, strings.Fields(tc.args)...))
			if err != nil {
				assert.EqualError(t, err, tc.want)
				return
			}
			assert.Equal(t, tc.want, seen)
			if strings.Contains(tc.args, "help") {
				assert.Contains(t, out.String(), "USAGE:", "help shows whatever the variables hold")
			}
		})
	}
}
