package cliusage

import (
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// EnvAfterFlags makes every flag of app, its own (the flags before the
// command) and those of its commands and their subcommands at any depth,
// take its value from its environment variables only when the command
// line does not give it: a flag given explicitly wins over its variable,
// which is then not even read, so a bad one stops nothing.
//
// urfave/cli/v2 reads a flag's EnvVars in the flag's Apply, before it
// parses the command line, and fails on a value it cannot parse whatever
// the command line says; neither IsSet nor a flag's Action runs before
// that. So each flag with EnvVars is wrapped: its Apply leaves them out,
// and the Before of the app or command that has it (before any Before
// set earlier) sets each flag the command line left unset from the first
// of its variables that is set, as urfave picks it, parsed by the flag's
// own parser. A value it cannot parse is a usage error naming the
// variable, its value, the flag and what the flag takes, given to the
// OnUsageError of the app or command as the command line's are. An
// empty variable sets a string flag to empty and leaves any other flag
// unset (urfave sets a bool flag to false). Help still lists the
// variables; Source and Given tell where a value came from. The app's
// own flags' variables are read before any command is, as urfave reads
// them: a bad one stops every command, but not help (AsksHelp), which
// shows the flag's default instead.
func EnvAfterFlags(app *cli.App) {
	app.Flags, app.Before = envAfter(app.Flags, app.Before)
	envAfterCommands(app.Commands)
}

func envAfterCommands(cmds []*cli.Command) {
	for _, c := range cmds {
		c.Flags, c.Before = envAfter(c.Flags, c.Before)
		envAfterCommands(c.Subcommands)
	}
}

// envAfter returns flags with those that have variables wrapped, and
// before preceded by reading them; flags and before as they are when
// none has.
func envAfter(flags []cli.Flag, before cli.BeforeFunc) ([]cli.Flag, cli.BeforeFunc) {
	// A new slice: commands may share one, and each gets its own
	// wrappers, which keep where their values came from.
	wrapped, some := slices.Clone(flags), false
	for i, f := range wrapped {
		if w := wrapEnv(f); w != nil {
			wrapped[i], some = w, true
		}
	}
	if !some {
		return flags, before
	}
	return wrapped, func(ctx *cli.Context) error {
		if err := applyEnv(ctx); err != nil {
			return err
		}
		if before != nil {
			return before(ctx)
		}
		return nil
	}
}

// fullFlag is what urfave asks of a flag when it parses it, checks it,
// runs its action and shows it in help: every flag type of urfave's has
// all of it.
type fullFlag interface {
	cli.DocGenerationFlag
	cli.CategorizableFlag
	cli.RequiredFlag
	cli.ActionableFlag
}

// envFlag is a flag whose variables are read after the command line.
type envFlag struct {
	fullFlag
	vars   []string
	envVar reflect.Value // the flag's EnvVars field, empty while it applies
	// text: the flag holds a string, which an empty variable sets.
	text bool
	// from and raw are the variable the value came from in this run and
	// what it held; from is "" when the value is not a variable's.
	from, raw string
}

// wrapEnv returns f as an envFlag, or nil for a flag with no variables
// (or already wrapped, or of a type that is not urfave's).
func wrapEnv(f cli.Flag) *envFlag {
	ff, ok := f.(fullFlag)
	if _, wrapped := f.(*envFlag); !ok || wrapped || len(ff.GetEnvVars()) == 0 {
		return nil
	}
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil
	}
	field := v.Elem().FieldByName("EnvVars")
	if !field.IsValid() || !field.CanSet() || field.Type() != reflect.TypeOf([]string(nil)) {
		return nil
	}
	value := v.Elem().FieldByName("Value")
	return &envFlag{fullFlag: ff, vars: ff.GetEnvVars(), envVar: field, text: value.IsValid() && value.Kind() == reflect.String}
}

// Apply applies the flag without its variables, which applyEnv reads
// once the command line is parsed.
func (f *envFlag) Apply(set *flag.FlagSet) error {
	f.envVar.Set(reflect.Zero(f.envVar.Type()))
	defer f.envVar.Set(reflect.ValueOf(f.vars))
	return f.fullFlag.Apply(set)
}

// IsRequired: a required flag one of whose variables is set is there,
// although urfave checks before applyEnv sets it.
func (f *envFlag) IsRequired() bool {
	_, _, set := lookupEnv(f.vars)
	return f.fullFlag.IsRequired() && !set
}

func lookupEnv(vars []string) (name, value string, ok bool) {
	for _, name := range vars {
		name = strings.TrimSpace(name)
		if value, ok := os.LookupEnv(name); ok {
			return name, value, true
		}
	}
	return "", "", false
}

// applyEnv sets the flags of c's command (the app's, at the top) that
// the command line did not give from their variables.
func applyEnv(c *cli.Context) error {
	for _, fl := range c.Command.Flags {
		f, ok := fl.(*envFlag)
		if !ok {
			continue
		}
		f.from, f.raw = "", ""
		if slices.ContainsFunc(f.Names(), c.IsSet) {
			continue
		}
		name, value, ok := lookupEnv(f.vars)
		if !ok || value == "" && !f.text {
			continue
		}
		if err := c.Set(f.Names()[0], value); err != nil {
			if AsksHelp(c) {
				continue // help shows; the command it is for does not run
			}
			err = fmt.Errorf("invalid value %q for $%s (flag --%s): %s", value, name, f.Names()[0], takes(f.fullFlag, value, err))
			if c.Command.OnUsageError != nil {
				return c.Command.OnUsageError(c, err, true)
			}
			return err
		}
		f.from, f.raw = name, value
	}
	return nil
}

// AsksHelp reports whether the rest of c's command line asks for help
// rather than running a command: -h or --help before any "--", or the
// help command ("help", "h") of a command that has subcommands (the
// app's among them).
func AsksHelp(c *cli.Context) bool {
	args := c.Args().Slice()
	if c.Command == nil || len(c.Command.Subcommands) > 0 {
		if first := c.Args().First(); first == "help" || first == "h" {
			return true
		}
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "--help", "-help":
			return true
		}
	}
	return false
}

// takes says what f takes, for a value it could not parse (err).
func takes(f cli.Flag, value string, err error) string {
	outOfRange := err.Error() == "value out of range" // the flag package's words
	switch f.(type) {
	case *cli.DurationFlag:
		return durationHint(value)
	case *cli.BoolFlag:
		return "true or false"
	case *cli.IntFlag, *cli.Int64Flag:
		if outOfRange {
			max := int64(math.MaxInt64)
			if _, ok := f.(*cli.IntFlag); ok {
				max = math.MaxInt
			}
			return fmt.Sprintf("a whole number from %d to %d", -max-1, max)
		}
		return "a whole number, e.g. 3"
	case *cli.UintFlag, *cli.Uint64Flag:
		return "a whole number, 0 or more"
	case *cli.Float64Flag:
		return "a number, e.g. 0.5"
	}
	return err.Error()
}

// Source names where the value of c's flag name came from, for a
// message about it: "--name" when the command line gave it, VAR when
// its variable VAR did (with EnvAfterFlags); neither, the flag's first
// variable if it has one (how its value is normally given), else --name.
func Source(c *cli.Context, name string) string {
	f := findEnvFlag(c, name)
	switch {
	case f != nil && f.from != "":
		return f.from
	case f != nil && !slices.ContainsFunc(f.Names(), c.IsSet):
		return strings.TrimSpace(f.vars[0])
	}
	return "--" + name
}

// Given is how c's flag name got its value, for a message refusing it:
// "VAR=VALUE (flag --name)" as its variable VAR held it (with
// EnvAfterFlags), else "--name VALUE", the value as the flag holds it.
func Given(c *cli.Context, name string) string {
	if f := findEnvFlag(c, name); f != nil && f.from != "" {
		return fmt.Sprintf("%s=%s (flag --%s)", f.from, f.raw, name)
	}
	return fmt.Sprintf("--%s %v", name, c.Value(name))
}

// findEnvFlag is the flag named name nearest c, of c's command or of a
// command above it (the app's at the top), if it is an envFlag; nil if
// it is not, or there is none. A command's flag hides one of the same
// name above it, as urfave reads it.
func findEnvFlag(c *cli.Context, name string) *envFlag {
	for _, ctx := range c.Lineage() {
		if ctx.Command == nil {
			continue
		}
		for _, fl := range ctx.Command.Flags {
			if slices.Contains(fl.Names(), name) {
				f, _ := fl.(*envFlag)
				return f
			}
		}
	}
	return nil
}
