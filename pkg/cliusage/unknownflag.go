package cliusage

import (
	"errors"
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/suggest"
)

// unknownFlagErr matches Go's flag package's error for a flag a command
// does not have: it names it with one dash, however it was given.
var unknownFlagErr = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)

// UnknownFlag returns err reworded when it is the error for a flag that
// is not among flags: it names the flag as a user types it (--data, -x)
// and the one of flags it looks most like, when one does ("unknown flag
// --data: did you mean --data-dir?"). It returns any other err as it is.
func UnknownFlag(err error, flags []cli.Flag) error {
	m := unknownFlagErr.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	msg := "unknown flag " + dashed(m[1])
	if like := mostLike(m[1], flags); like != "" {
		msg += ": did you mean " + dashed(like) + "?"
	}
	return errors.New(msg)
}

// Reword returns err, a usage error of a command whose flags are flags,
// as a person reads it best: a duration without a unit (DurationHint) and
// a flag the command does not have (UnknownFlag) are reworded, any other
// err is returned as it is.
func Reword(err error, flags []cli.Flag) error {
	return UnknownFlag(DurationHint(err, flags), flags)
}

// mostLike is the name of flags nearest name, if one is near enough to
// be what was meant.
func mostLike(name string, flags []cli.Flag) string {
	var names []string
	for _, f := range flags {
		names = append(names, f.Names()...)
	}
	return suggest.Nearest(name, names)
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
