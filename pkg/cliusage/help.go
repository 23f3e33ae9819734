package cliusage

import (
	"slices"

	"github.com/urfave/cli/v2"
)

// HelpCommand gives app a help command that shows just what a command's
// own --help shows, at any depth ("help job submit" is "job submit
// --help"): urfave/cli/v2's own took one name, and for a command with
// subcommands it listed none of them ("help job" printed only a name and
// a usage line), because their list is made only when that command runs.
// Call it before EnvAfterFlags.
func HelpCommand(app *cli.App) {
	// urfave adds its --help to the app only with its own help command.
	if !slices.ContainsFunc(app.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), "help") }) {
		app.Flags = append(app.Flags, cli.HelpFlag)
	}
	app.Commands = append(app.Commands, &cli.Command{
		Name:      "help",
		Aliases:   []string{"h"},
		Usage:     "show the commands, or a command's help (help job submit)",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			args := slices.Concat([]string{c.App.Name}, c.Args().Slice(), []string{"--help"})
			return c.App.RunContext(c.Context, args)
		},
	})
}
