package cli

import (
	_ "embed"
	"fmt"

	"github.com/urfave/cli/v2"
)

// The bash and zsh scripts ask the command itself what may come next
// (urfave/cli's --generate-bash-completion); fish's is made from the
// command tree.
var (
	//go:embed completion/coordinator.bash
	bashCompletion string
	//go:embed completion/coordinator.zsh
	zshCompletion string
)

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: "Prints the script that completes coordinator's commands and flags in a shell:\n" +
			"  bash:  source <(coordinator completion bash)   (or save it in /etc/bash_completion.d/)\n" +
			"  zsh:   source <(coordinator completion zsh)    (or save it as _coordinator in $fpath)\n" +
			"  fish:  coordinator completion fish > ~/.config/fish/completions/coordinator.fish",
		Action: completion,
	}
}

func completion(c *cli.Context) error {
	a, err := args(c, "bash|zsh|fish")
	if err != nil {
		return err
	}
	var script string
	switch a[0] {
	case "bash":
		script = bashCompletion
	case "zsh":
		script = zshCompletion
	case "fish":
		if script, err = c.App.ToFishCompletion(); err != nil {
			return fmt.Errorf("make the fish completion: %w", err)
		}
	default:
		return usagef("shell %q is not allowed: use bash, zsh or fish", a[0])
	}
	_, err = fmt.Fprint(c.App.Writer, script)
	return err
}
