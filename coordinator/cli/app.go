// Package cli is the coordinator's command line (urfave/cli/v2): the
// client commands for jobs, services, quotas, pools, nodes and clusters,
// which talk to a coordinator's HTTP API, and the server commands
// (coordinator server, coordinator dev) hooked in through serverCommands.
//
//	coordinator [--addr URL] [--token T] [--tls-ca FILE] [-o table|json|yaml] COMMAND
//
// People get tables (text/tabwriter); scripts get -o json or -o yaml,
// which print the API's JSON bodies (pkg/wire). -o may also
// follow the command: coordinator job list -o json.
package cli

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/client"
	"github.com/atom-sched/atom/pkg/cliusage"
	"github.com/atom-sched/atom/pkg/structs"
)

// serverCommands are the commands that run a coordinator rather than talk
// to one: `coordinator server` and `coordinator dev`. App appends them
// after the client commands. Whoever wires the Raft server adds them from
// an init function in a file of this package, e.g.
//
//	func init() { serverCommands = append(serverCommands, serverCommand(), devCommand()) }
var serverCommands []*cli.Command

// Defaults of the global flags.
const (
	DefaultAddr = "http://127.0.0.1:7070"
	EnvAddr     = "ATOM_ADDR"
	EnvToken    = "ATOM_TOKEN"
	EnvTLSCA    = client.EnvTLSCA // ATOM_TLS_CA
)

// App returns the coordinator command. Run returns errors instead of
// exiting (ExitErrHandler is a no-op): the caller prints them and picks
// the exit status (ExitCode).
func App() *cli.App {
	app := &cli.App{
		Name:  "coordinator",
		Usage: "atom's control plane: run a coordinator, or manage jobs, quotas, pools, nodes and clusters on one",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", EnvVars: []string{EnvAddr}, Value: DefaultAddr, Usage: "the coordinator's HTTP address"},
			&cli.StringFlag{Name: "token", EnvVars: []string{EnvToken}, Usage: "your API token (from the coordinator's tokens file)"},
			&cli.DurationFlag{Name: "timeout", EnvVars: []string{"ATOM_TIMEOUT"}, Value: 30 * time.Second, Usage: "how long one request may take, its retries included (0: no limit); job logs -f and --wait are not bounded as a whole"},
			&cli.StringFlag{Name: "tls-ca", EnvVars: []string{EnvTLSCA}, Usage: "PEM file of the CA that signed an HTTPS coordinator's certificate (besides the system's roots)"},
			outputFlag(),
		},
		Before: func(c *cli.Context) error {
			if err := checkAddr(c); err != nil {
				return err
			}
			if talks(c) && c.Duration("timeout") < 0 {
				return usagef("%s: use 0 (no limit) or more, a duration such as 30s", cliusage.Given(c, "timeout"))
			}
			// The app's --timeout, kept apart from job wait's own.
			c.App.Metadata = map[string]any{timeoutKey: c.Duration("timeout")}
			if ca := c.String("tls-ca"); ca != "" {
				cfg, err := client.TLSConfig(ca)
				if err != nil {
					return usagef("%s: %v", cliusage.Source(c, "tls-ca"), err)
				}
				c.App.Metadata[tlsKey] = cfg
			}
			return nil
		},
		Commands:             append(clientCommands(), serverCommands...),
		EnableBashCompletion: true,
		Suggest:              true, // "job lst": Did you mean 'list'?
		HideVersion:          true,
		ExitErrHandler:       func(*cli.Context, error) {},
	}
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return usagef("%v (see coordinator --help)", cliusage.Reword(err, app.Flags))
	}
	// A flag a command cannot parse is a usage error (exit status 2, one
	// line naming the flag) instead of urfave's whole help text and exit
	// status 1.
	cliusage.OnEveryCommand(app.Commands, func(c *cli.Context, err error, _ bool) error {
		return usagef("%v (see %s --help)", cliusage.Reword(err, c.Command.Flags), c.Command.HelpName)
	})
	// help job submit shows what job submit --help does.
	cliusage.HelpCommand(app)
	// A flag on the command line wins over its variable ($ATOM_TIMEOUT
	// for --timeout), which is read only for a flag not given; a bad
	// variable is a usage error naming it.
	cliusage.EnvAfterFlags(app)
	return app
}

// ExitCode is the exit status for an error Run returned: an ExitCoder's
// own, 2 for a usage error, else 1.
func ExitCode(err error) int {
	var ec cli.ExitCoder
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.As(err, &ue), strings.HasPrefix(err.Error(), "Required flag"):
		return 2 // urfave's missing required flags are usage errors too
	}
	return 1
}

// Main runs the app on args and returns the exit status, printing errors
// to stderr as "coordinator: ...".
func Main(args []string) int {
	app := App()
	err := unknownCommand(app.Run(args))
	if err != nil {
		fmt.Fprintln(os.Stderr, "coordinator:", err)
	}
	return ExitCode(err)
}

func clientCommands() []*cli.Command {
	return []*cli.Command{jobCommand(), serviceCommand(), eventsCommand(), quotaCommand(), poolCommand(), nodeCommand(), clusterCommand(), volumeCommand(),
		configCommand(structs.ConfigKindConfig), configCommand(structs.ConfigKindSecret), completionCommand()}
}

// usageError is a command used wrongly; it exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// args checks that c got exactly the named arguments and returns them.
func args(c *cli.Context, names ...string) ([]string, error) {
	if c.NArg() != len(names) {
		for _, a := range c.Args().Slice() {
			if len(a) > 1 && strings.HasPrefix(a, "-") {
				return nil, usagef("usage: %s: flags go before the arguments: %s", usage(c, names), flagsFirst(c))
			}
		}
		return nil, usagef("usage: %s", usage(c, names))
	}
	a := c.Args().Slice()
	for i, n := range names {
		if err := nonEmpty(c, usage(c, names), n, a[i]); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// nonEmpty refuses an empty argument, such as an unset "$ID", naming it:
// sent on, it would name no object and get a puzzling answer.
func nonEmpty(c *cli.Context, usage, name, val string) error {
	if strings.TrimSpace(val) != "" {
		return nil
	}
	return usagef("usage: %s: %s is empty: give one (an unset shell variable, such as \"$%s\", gives an empty argument)", usage, name, argVar(name))
}

// argVar is the shell variable an argument is likely held in: ID for ID,
// NAME for NAME, else ARG.
func argVar(name string) string {
	if strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
		return name
	}
	return "ARG"
}

// flagsFirst is the command line c was meant as: the flags given after
// its arguments (with their values) moved before them.
func flagsFirst(c *cli.Context) string {
	line := []string{c.Command.HelpName}
	var rest []string
	a := c.Args().Slice()
	for i := 0; i < len(a); i++ {
		if len(a[i]) < 2 || !strings.HasPrefix(a[i], "-") {
			rest = append(rest, a[i])
			continue
		}
		line = append(line, a[i])
		name := strings.TrimLeft(a[i], "-")
		if !strings.Contains(name, "=") && takesValue(c.Command, name) && i+1 < len(a) {
			i++
			line = append(line, a[i])
		}
	}
	return strings.Join(append(line, rest...), " ")
}

// takesValue reports whether cmd has a flag called name that is not a
// switch.
func takesValue(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			// A switch (a bool flag) takes none, wrapped by
			// cliusage.EnvAfterFlags or not.
			d, ok := f.(cli.DocGenerationFlag)
			return ok && d.TakesValue()
		}
	}
	return false
}

func usage(c *cli.Context, names []string) string {
	s := c.Command.HelpName
	for _, n := range names {
		s += " " + n
	}
	return s
}

// Keys of the app's Metadata: the *tls.Config made from --tls-ca, and
// the app's --timeout (job wait has a --timeout of its own).
const (
	tlsKey     = "tls"
	timeoutKey = "timeout"
)

// newClient returns a client for the global --addr, --token, --tls-ca
// and --timeout.
func newClient(c *cli.Context) *client.Client {
	cl := client.New(c.String("addr"), c.String("token"))
	cl.Timeout, _ = c.App.Metadata[timeoutKey].(time.Duration)
	if cfg, ok := c.App.Metadata[tlsKey].(*tls.Config); ok {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = cfg
		cl.HTTP = &http.Client{Transport: tr}
	}
	return cl
}

// readSpec reads the -f file ("-" for standard input) and refuses one
// that holds no spec, naming it, before any request: one of 0 bytes, of
// nothing but whitespace, comments or a byte-order mark, and one whose
// document is null, alike. A file that cannot be read, and one over
// structs.MaxSpecBytes (read no further), are refused the same way. What
// else is wrong with it the coordinator says.
func readSpec(c *cli.Context) ([]byte, error) {
	name := c.String("file")
	what := specWhat(c)
	var b []byte
	var err error
	where := "spec file " + name
	if name == "-" {
		r := c.App.Reader
		if r == nil {
			r = os.Stdin
		}
		if b, err = io.ReadAll(io.LimitReader(r, structs.MaxSpecBytes+1)); err != nil {
			return nil, fmt.Errorf("read the spec on standard input: %w", err)
		}
		where = "the spec on standard input"
	} else if b, err = readFileUpTo(name, structs.MaxSpecBytes+1); err != nil {
		return nil, unreadable(name, what, err)
	}
	if len(b) > structs.MaxSpecBytes {
		return nil, usagef("%s is over %d bytes: a %s is at most %d bytes (1 MiB)", where, structs.MaxSpecBytes, what, structs.MaxSpecBytes)
	}
	var none *structs.NoSpecError
	if _, err := structs.SpecRoot(b, what); errors.As(err, &none) {
		if none.Null != "" {
			return nil, usagef("%s is null (%s): give %s", where, none.Document(), structs.SpecWanted(what))
		}
		return nil, usagef("%s is empty (only comments or whitespace): give %s", where, structs.SpecWanted(what))
	}
	return b, nil
}

// readFileUpTo reads at most n bytes of file name.
func readFileUpTo(name string, n int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

// unreadable is the usage error for spec file name, which could not be
// read (err): it names the file and says what to give instead.
func unreadable(name, what string, err error) error {
	instead := "give the path of a file that holds the " + what + ", or - to read it from standard input"
	if st, serr := os.Stat(name); serr == nil && st.IsDir() {
		return usagef("spec file %s is a directory: %s", name, instead)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return usagef("spec file %s does not exist: %s", name, instead)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the file is named already
	}
	return usagef("spec file %s cannot be read: %v", name, err)
}

// sentSpec names the -f file in err, a refusal of the spec a command read
// from it: "set FILE: ...", as job submit's "submit FILE: ..."; "the spec
// on standard input" for -f -.
func sentSpec(c *cli.Context, verb string, err error) error {
	return fmt.Errorf("%s %s: %w", verb, specSource(c), err)
}

// specSource names where the -f spec came from: the file, or standard
// input for -f -.
func specSource(c *cli.Context) string {
	if name := c.String("file"); name != "-" {
		return name
	}
	return "the spec on standard input"
}

// specWhat names the spec a command takes: "job spec" for job submit,
// "node spec" for node set.
func specWhat(c *cli.Context) string {
	if w := strings.Fields(c.Command.HelpName); len(w) >= 3 {
		return w[len(w)-2] + " spec"
	}
	return "spec"
}

func fileFlag(what string) *cli.StringFlag {
	return &cli.StringFlag{Name: "file", Aliases: []string{"f"}, Required: true, Usage: what + " in YAML or JSON (- for standard input)"}
}

// unknownCommand words urfave/cli's answer to a command that does not
// exist ("No help topic for 'jobs'", as if help had been asked for) as
// what it is, keeping its suggestion and exit status.
func unknownCommand(err error) error {
	const prefix = "No help topic for "
	if err == nil || !strings.HasPrefix(err.Error(), prefix) {
		return err
	}
	return cli.Exit("unknown command "+strings.TrimPrefix(err.Error(), prefix)+" (--help lists the commands)", ExitCode(err))
}

// talks reports whether the command c runs talks to a coordinator: the
// commands that run one, help (a command's --help too) and completion do
// not, nor does the app without a command.
func talks(c *cli.Context) bool {
	if cliusage.AsksHelp(c) {
		return false
	}
	switch c.Args().First() {
	case "server", "dev", "help", "h", "completion", "":
		return false
	}
	return true
}

// checkAddr refuses an --addr (or $ATOM_ADDR, named when the value came
// from it) that names no coordinator, before any request:
// "http://a:7071,http://b:7072" was retried until --timeout and then
// reported as a coordinator that did not answer. A host:port without a
// scheme is http://, as the client takes it.
func checkAddr(c *cli.Context) error {
	if !talks(c) {
		return nil
	}
	addr := client.New(c.String("addr"), "").Addr()
	u, err := url.Parse(addr)
	if err == nil {
		switch {
		case u.Scheme != "http" && u.Scheme != "https":
			err = fmt.Errorf("the scheme is %q", u.Scheme)
		case u.Hostname() == "" || strings.Contains(u.Host, ","):
			err = fmt.Errorf("no single host in it")
		case u.Port() != "" && strings.Trim(u.Port(), "0123456789") != "":
			err = fmt.Errorf("port %q", u.Port())
		case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			err = fmt.Errorf("it has more than scheme, host and port")
		}
	}
	if err != nil {
		return usagef("%s %q is not allowed (%v): give one coordinator's URL, such as http://127.0.0.1:7070 (https:// with TLS); any server of a cluster answers", cliusage.Source(c, "addr"), c.String("addr"), err)
	}
	return nil
}
