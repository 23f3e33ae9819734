package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/atom/internal/rsh"
	"github.com/atom-sched/atom/pkg/structs"
)

// exitRsh is atom rsh's status when the remote command's is unknown
// (refused, unreachable, connection lost), as ssh's.
const exitRsh = 255

func rshCommand() *cli.Command {
	return &cli.Command{
		Name:  "rsh",
		Usage: "run a command on another task of this job: mpirun's remote-launch agent (--mca plm_rsh_agent \"atom rsh\")",
		Description: `HOST is a task ID of this job. Its launch endpoint comes from the JSON
{host: "ip:port"} file named by ATOM_RSH_HOSTS, else from the coordinator
(ATOM_COORDINATOR, with ATOM_TASK_ID and ATOM_TOKEN); a HOST of the form
ip:port is used as it is. COMMAND runs there under /bin/sh -c, as ssh does;
atom rsh exits with its status, or 255 when there is none. ssh options
before HOST (-x, -l USER, ...) are accepted and ignored.`,
		ArgsUsage:       "[ssh options] HOST COMMAND...",
		SkipFlagParsing: true,
		HideHelpCommand: true,
		Action:          rshAction,
	}
}

func rshAction(c *cli.Context) error {
	// Its flags are ssh's, not parsed: --help (or -h) alone asks for help.
	if a := c.Args().Slice(); len(a) == 1 && (a[0] == "--help" || a[0] == "-h") {
		return cli.ShowCommandHelp(c.Lineage()[1], c.Command.Name)
	}
	host, argv, err := rshArgs(c.Args().Slice())
	if err == nil {
		var code int
		if code, err = rshRun(host, argv); err == nil {
			if code != 0 {
				return cli.Exit("", code)
			}
			return nil
		}
	}
	return cli.Exit("atom rsh: "+err.Error(), exitRsh)
}

func rshRun(host string, argv []string) (int, error) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	token := os.Getenv("ATOM_TOKEN")
	if token == "" {
		return 0, errors.New("ATOM_TOKEN is not set: atom rsh runs under atom run, as a descendant of a task of the job")
	}
	if v := os.Getenv(envRshHeaderTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%s=%q: use a duration such as 30s, or 0 for no bound", envRshHeaderTimeout, v)
		}
		rsh.SetHeaderTimeout(d)
	}
	endpoint, err := rshResolve(ctx, host, token)
	if err != nil {
		return 0, err
	}
	code, err := rsh.Run(ctx, endpoint, token, argv, os.Stdout, os.Stderr)
	if err != nil && host != endpoint {
		err = fmt.Errorf("host %s: %w", host, err)
	}
	return code, err
}

// envRshHeaderTimeout bounds how long atom rsh waits for the launch
// server's answer (it answers once the command has started); unset or 0:
// no bound.
const envRshHeaderTimeout = "ATOM_RSH_HEADER_TIMEOUT"

// rshResolve finds host's launch endpoint.
func rshResolve(ctx context.Context, host, token string) (string, error) {
	if path := os.Getenv("ATOM_RSH_HOSTS"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("ATOM_RSH_HOSTS: %w", err)
		}
		var hosts map[string]string
		if err := json.Unmarshal(b, &hosts); err != nil {
			return "", fmt.Errorf("ATOM_RSH_HOSTS: %s is not a JSON object of host to endpoint: %w", path, err)
		}
		if ep, ok := hosts[host]; ok {
			return ep, nil
		}
	}
	if structs.CheckEndpoint(host) == nil {
		return host, nil
	}
	coord, self := os.Getenv("ATOM_COORDINATOR"), os.Getenv("ATOM_TASK_ID")
	if coord == "" || self == "" {
		return "", fmt.Errorf("host %s: not in ATOM_RSH_HOSTS, and ATOM_COORDINATOR or ATOM_TASK_ID is not set to look it up", host)
	}
	return rsh.Resolve(ctx, rsh.Coordinators(coord), structs.TaskID(self), token, host)
}

// sshValueOpts are ssh's options that take a value.
const sshValueOpts = "BbcDEeFIiJLlmOopQRSWw"

// rshArgs splits ssh-style arguments into HOST and COMMAND, skipping the
// options OpenMPI or a user may put first (-x, -l user, -p22, -o K=V, --).
func rshArgs(args []string) (host string, argv []string, err error) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && len(args[i]) > 1 {
		a := args[i]
		i++
		if a == "--" {
			break
		}
		for j := 1; j < len(a); j++ {
			if strings.IndexByte(sshValueOpts, a[j]) >= 0 {
				if j == len(a)-1 {
					i++ // the value is the next argument
				}
				break
			}
		}
	}
	if i >= len(args) {
		return "", nil, errors.New("no host: use atom rsh HOST COMMAND...")
	}
	host = args[i]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:] // user@host: there are no users to switch to
	}
	if len(args) == i+1 {
		return "", nil, fmt.Errorf("no command for host %s: atom rsh runs a command, it opens no shell", host)
	}
	return host, args[i+1:], nil
}
