// Package cliusage words urfave/cli's usage errors for people, in the
// same way for the coordinator and for atom: one line that names what
// was wrong, never the command's whole help text, and for a duration
// what a duration looks like, where urfave says only "parse error" or
// passes on Go's parser's words. With EnvAfterFlags a flag given on the
// command line wins over its environment variable, and a value is
// refused naming the variable it came from.
package cliusage

import (
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/urfave/cli/v2"
)

// OnEveryCommand sets fn as the OnUsageError of cmds and of their
// subcommands, at any depth, where none is set.
func OnEveryCommand(cmds []*cli.Command, fn cli.OnUsageErrorFunc) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = fn
		}
		OnEveryCommand(c.Subcommands, fn)
	}
}

var (
	// badDurationFlag matches urfave's error for a duration flag whose
	// value Go could not parse ("5" lacks a unit): it says "parse error".
	badDurationFlag = regexp.MustCompile(`^invalid value "([^"]*)" for flag -([\w-]+): parse error$`)
	// badDurationEnv matches urfave's error for a duration flag's
	// environment variable that Go could not parse.
	badDurationEnv = regexp.MustCompile(`^could not parse "([^"]*)" as duration value from environment variable "([^"]+)" for flag ([\w-]+): `)
)

var plainNumber = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// DurationHint returns err reworded when it is urfave's error for a
// duration flag of flags given a value that is not a duration, on the
// command line or in the flag's environment variable: it names the flag
// (and the variable), the value, and says that a duration is a number
// with a unit. It returns any other err as it is.
func DurationHint(err error, flags []cli.Flag) error {
	var value, name, where string
	if m := badDurationFlag.FindStringSubmatch(err.Error()); m != nil {
		value, name = m[1], m[2]
		where = "flag --" + name
	} else if m := badDurationEnv.FindStringSubmatch(err.Error()); m != nil {
		value, name = m[1], m[3]
		where = fmt.Sprintf("$%s (flag --%s)", m[2], name)
	}
	if where == "" || !slices.ContainsFunc(flags, func(f cli.Flag) bool {
		if e, ok := f.(*envFlag); ok {
			f = e.fullFlag
		}
		d, ok := f.(*cli.DurationFlag)
		return ok && slices.Contains(d.Names(), name)
	}) {
		return err
	}
	return fmt.Errorf("invalid value %q for %s: %s", value, where, durationHint(value))
}

// durationHint says what a duration looks like, for value that is not one.
func durationHint(value string) string {
	hint := "a duration is a number with a unit, e.g. 5s, 10m or 1h30m"
	// A plain number of seconds gets its spelling as a duration, when
	// that is one (not 1e3, -5, +5 or past the largest duration).
	if plainNumber.MatchString(value) {
		if _, derr := time.ParseDuration(value + "s"); derr == nil {
			hint += fmt.Sprintf(" (%ss for %s seconds)", value, value)
		}
	}
	return hint
}
