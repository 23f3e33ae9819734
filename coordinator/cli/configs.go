package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/atom-sched/atom/pkg/wire"
)

// config and secret: the same commands for both kinds.
func configCommand(kind structs.ConfigKind) *cli.Command {
	projectFlag := &cli.StringFlag{Name: "project", Usage: "the project's (its members share it); default: yours"}
	userFlag := &cli.StringFlag{Name: "user", Usage: "another user's (admins); default: yours"}
	dataFlags := []cli.Flag{
		&cli.StringSliceFlag{Name: "from-file", Usage: "[KEY=]PATH: a file's bytes as KEY (default: the file's name); a directory: each of its files (repeat)"},
		&cli.StringSliceFlag{Name: "from-literal", Usage: "KEY=VALUE (repeat)"},
		projectFlag, userFlag, outputFlag(),
	}
	what := map[structs.ConfigKind]string{
		structs.ConfigKindConfig: "configs: files a job mounts or takes as environment variables (configs: [{config: NAME, mountPath: /etc/x}])",
		structs.ConfigKindSecret: "secrets: passwords, tokens and keys a job mounts or takes as environment variables (configs: [{secret: NAME, env: true}]), kept encrypted; their values are never listed",
	}[kind]
	get := &cli.Command{Name: "get", Usage: "show one (a config's values too; a secret's keys, sizes and digest)", ArgsUsage: "NAME",
		Flags: []cli.Flag{projectFlag, userFlag, outputFlag()}, Action: configGet(kind)}
	cmd := &cli.Command{
		Name:  string(kind),
		Usage: "manage " + what,
		Subcommands: []*cli.Command{
			{Name: "create", Usage: "create one", ArgsUsage: "NAME", Flags: dataFlags, Action: configPut(kind, true),
				UsageText: fmt.Sprintf("coordinator %s create NAME --from-file KEY=PATH ... [--from-literal KEY=VALUE ...] [--project P | --user U]", kind)},
			get,
			{Name: "list", Usage: "list yours and your projects' (admins: everyone's); a long KEYS or USED BY cell ends 'and N more': get NAME lists them all", Flags: []cli.Flag{projectFlag, userFlag, outputFlag()}, Action: configList(kind)},
			{Name: "update", Usage: "replace its data with the given keys (a new version; running tasks keep theirs: coordinator service restart ID)", ArgsUsage: "NAME",
				Flags: dataFlags, Action: configPut(kind, false)},
			{Name: "delete", Usage: "delete one no job that has not ended uses", ArgsUsage: "NAME", Flags: []cli.Flag{projectFlag, userFlag}, Action: configDelete(kind)},
		},
	}
	if kind == structs.ConfigKindSecret {
		get.Flags = append(get.Flags, &cli.StringFlag{Name: "show", Usage: "print the value of this key, as it is (its owner only; a project's: its members)"})
		get.UsageText = "coordinator secret get NAME [--project P | --user U] [--show KEY]"
		cmd.Subcommands = append(cmd.Subcommands, &cli.Command{Name: "rekey", Usage: "seal every secret again with the keyring's first key, after a key rotation (admins)",
			Flags: []cli.Flag{outputFlag()}, Action: secretRekey})
	}
	return cmd
}

// configArgs is a config command's NAME and flags, which may come before
// NAME or after it (coordinator config create NAME --from-file a=b).
type configArgs struct {
	name            string
	files, literals []string
	project, user   string
	show, output    string
}

type repeated struct{ vals *[]string }

func (r repeated) String() string     { return "" }
func (r repeated) Set(v string) error { *r.vals = append(*r.vals, v); return nil }

func parseConfigArgs(c *cli.Context) (configArgs, error) {
	a := configArgs{files: c.StringSlice("from-file"), literals: c.StringSlice("from-literal"), project: c.String("project"),
		user: c.String("user"), show: c.String("show"), output: c.String("output")}
	args := c.Args().Slice()
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return a, usagef("usage: %s NAME", c.Command.HelpName)
	}
	if err := nonEmpty(c, c.Command.HelpName+" NAME", "NAME", args[0]); err != nil {
		return a, err
	}
	a.name = args[0]
	fs := flag.NewFlagSet(c.Command.HelpName, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.Command.Names()[0] == "create" || c.Command.Names()[0] == "update" {
		fs.Var(repeated{&a.files}, "from-file", "")
		fs.Var(repeated{&a.literals}, "from-literal", "")
	}
	if c.Command.Names()[0] == "get" {
		fs.StringVar(&a.show, "show", a.show, "")
	}
	fs.StringVar(&a.project, "project", a.project, "")
	fs.StringVar(&a.user, "user", a.user, "")
	fs.StringVar(&a.output, "output", a.output, "")
	fs.StringVar(&a.output, "o", a.output, "")
	if err := fs.Parse(args[1:]); err != nil {
		return a, usagef("%s: %v", c.Command.HelpName, err)
	}
	if fs.NArg() > 0 {
		return a, usagef("usage: %s NAME: one name only, got also %s", c.Command.HelpName, strings.Join(fs.Args(), " "))
	}
	if a.project != "" && a.user != "" {
		return a, usagef("%s: give --project or --user, not both", c.Command.HelpName)
	}
	if a.output != c.String("output") {
		if err := c.Set("output", a.output); err != nil {
			return a, usagef("%v", err)
		}
	}
	return a, nil
}

// owner is the owner --project or --user names ("": the caller).
func (a configArgs) owner() structs.Scope { return ownerOf(a.project, a.user) }

func ownerOf(project, user string) structs.Scope {
	switch {
	case project != "":
		return structs.ProjectScope(structs.ProjectID(project))
	case user != "":
		return structs.UserScope(structs.UserID(user))
	}
	return ""
}

// data reads the --from-file and --from-literal values.
func (a configArgs) data(kind structs.ConfigKind) (structs.ConfigData, error) {
	d := structs.ConfigData{}
	add := func(k string, v []byte, from string) error {
		if _, dup := d[k]; dup {
			return usagef("key %q is given twice (%s): give each key once", k, from)
		}
		d[k] = v
		return nil
	}
	for _, f := range a.files {
		key, path, named := strings.Cut(f, "=")
		if !named {
			key, path = "", f
		}
		st, err := os.Stat(path)
		if err != nil {
			return nil, usagef("--from-file %s: %v", f, err)
		}
		if st.IsDir() && !named {
			entries, err := os.ReadDir(path)
			if err != nil {
				return nil, usagef("--from-file %s: %v", f, err)
			}
			for _, e := range entries {
				if !e.Type().IsRegular() {
					continue
				}
				b, err := os.ReadFile(filepath.Join(path, e.Name()))
				if err != nil {
					return nil, usagef("--from-file %s: %v", f, err)
				}
				if err := add(e.Name(), b, "in "+path); err != nil {
					return nil, err
				}
			}
			continue
		}
		if key == "" {
			key = filepath.Base(path)
		}
		if st.Size() > structs.MaxConfigBytes {
			return nil, usagef("--from-file %s: the file is %d bytes: a %s holds at most %d (1 MiB), keys included", f, st.Size(), kind, structs.MaxConfigBytes)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, usagef("--from-file %s: %v", f, err)
		}
		if err := add(key, b, "--from-file "+f); err != nil {
			return nil, err
		}
	}
	for _, l := range a.literals {
		key, val, ok := strings.Cut(l, "=")
		if !ok {
			return nil, usagef("--from-literal takes KEY=VALUE; got one without '=' (key %q)", key)
		}
		if err := add(key, []byte(val), "--from-literal "+key); err != nil {
			return nil, err
		}
	}
	if len(d) == 0 {
		return nil, usagef("usage: %s NAME --from-file [KEY=]PATH ... --from-literal KEY=VALUE ...: give its data", map[structs.ConfigKind]string{
			structs.ConfigKindConfig: "coordinator config create|update", structs.ConfigKindSecret: "coordinator secret create|update"}[kind])
	}
	return d, nil
}

func configPut(kind structs.ConfigKind, create bool) cli.ActionFunc {
	return func(c *cli.Context) error {
		a, err := parseConfigArgs(c)
		if err != nil {
			return err
		}
		data, err := a.data(kind)
		if err != nil {
			return err
		}
		spec := wire.ConfigSpec{Name: a.name, Data: data}
		cl := newClient(c)
		var v *wire.Config
		if create {
			v, err = cl.CreateConfig(c.Context, kind, a.owner(), spec)
		} else {
			spec.Name = ""
			v, err = cl.UpdateConfig(c.Context, kind, a.owner(), a.name, spec)
		}
		if err != nil {
			return err
		}
		return show(c, v, func(w io.Writer) {
			desc := fmt.Sprintf("%d key(s), %d bytes", len(v.Keys), size(v.Keys))
			switch {
			case v.Existing:
				fmt.Fprintf(w, "%s %s exists with this data already (version %d, %s)\n", kind, v.Name, v.Version, desc)
			case v.Unchanged:
				fmt.Fprintf(w, "%s %s unchanged: it holds this data already (version %d)\n", kind, v.Name, v.Version)
			case create:
				fmt.Fprintf(w, "%s %s created for %s: version %d, %s\n", kind, v.Name, v.Owner, v.Version, desc)
			default:
				fmt.Fprintf(w, "%s %s updated: version %d, %s\n", kind, v.Name, v.Version, desc)
				if len(v.UsedBy) > 0 {
					fmt.Fprintf(w, "running tasks keep the version they started with; used by %s (coordinator service restart ID gives a service's replicas this one)\n", joinJobs(v.UsedBy))
				}
			}
		})
	}
}

func size(keys []structs.ConfigKey) int {
	n := 0
	for _, k := range keys {
		n += k.Size
	}
	return n
}

func joinJobs(ids []structs.JobID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}

func configGet(kind structs.ConfigKind) cli.ActionFunc {
	return func(c *cli.Context) error {
		a, err := parseConfigArgs(c)
		if err != nil {
			return err
		}
		cl := newClient(c)
		if a.show != "" {
			v, err := cl.SecretValue(c.Context, a.owner(), a.name, a.show)
			if err != nil {
				return err
			}
			return show(c, v, func(w io.Writer) { _, _ = w.Write(v.Value) })
		}
		v, err := cl.Config(c.Context, kind, a.owner(), a.name)
		if err != nil {
			return err
		}
		return show(c, v, func(w io.Writer) {
			tw := tab(w)
			kv := func(k string, v any) { row(tw, k+":", v) }
			kv("Name", v.Name)
			kv("Owner", v.Owner)
			kv("Version", v.Version)
			kv("Digest", v.Digest)
			if v.SealedWith != "" {
				kv("Sealed with", "key "+v.SealedWith)
			}
			kv("Created", when(v.Created)+" by "+string(v.CreatedBy))
			kv("Updated", when(v.Updated)+" by "+string(v.UpdatedBy))
			kv("Used by", joinJobs(v.UsedBy))
			tw.Flush()
			fmt.Fprintln(w)
			tw = tab(w)
			row(tw, "KEY", "BYTES")
			for _, k := range v.Keys {
				row(tw, k.Key, k.Size)
			}
			tw.Flush()
			for _, k := range v.Keys {
				val, ok := v.Data[k.Key]
				switch {
				case !ok:
				case !utf8.Valid(val) || strings.ContainsRune(string(val), 0):
					fmt.Fprintf(w, "\n--- %s: %d bytes, not text (-o yaml shows them in base64)\n", k.Key, len(val))
				default:
					fmt.Fprintf(w, "\n--- %s\n%s", k.Key, val)
					if len(val) > 0 && val[len(val)-1] != '\n' {
						fmt.Fprintln(w)
					}
				}
			}
		})
	}
}

func configList(kind structs.ConfigKind) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := noArgs(c); err != nil {
			return err
		}
		if c.String("project") != "" && c.String("user") != "" {
			return usagef("%s: give --project or --user, not both", c.Command.HelpName)
		}
		list, err := newClient(c).Configs(c.Context, kind, ownerOf(c.String("project"), c.String("user")))
		if err != nil {
			return err
		}
		return show(c, wire.ConfigList{Configs: list}, func(w io.Writer) {
			if len(list) == 0 {
				fmt.Fprintf(w, "no %ss\n", kind)
				return
			}
			tw := tab(w)
			head := []any{"NAME", "OWNER", "VERSION", "KEYS", "BYTES", "UPDATED", "USED BY"}
			if kind == structs.ConfigKindSecret {
				head = append(head, "SEALED WITH")
			}
			row(tw, head...)
			for _, v := range list {
				keys := make([]string, len(v.Keys))
				for i, k := range v.Keys {
					keys[i] = k.Key
				}
				jobs := make([]string, len(v.UsedBy))
				for i, id := range v.UsedBy {
					jobs[i] = string(id)
				}
				cells := []any{v.Name, v.Owner, v.Version, fit(keys, listWidth), size(v.Keys), when(v.Updated), fit(jobs, listWidth)}
				if kind == structs.ConfigKindSecret {
					cells = append(cells, v.SealedWith)
				}
				row(tw, cells...)
			}
			tw.Flush()
		})
	}
}

func configDelete(kind structs.ConfigKind) cli.ActionFunc {
	return func(c *cli.Context) error {
		a, err := parseConfigArgs(c)
		if err != nil {
			return err
		}
		if err := newClient(c).DeleteConfig(c.Context, kind, a.owner(), a.name); err != nil {
			return err
		}
		if o := a.owner(); o != "" {
			fmt.Fprintf(c.App.Writer, "%s %s of %s deleted\n", kind, a.name, o)
			return nil
		}
		fmt.Fprintf(c.App.Writer, "%s %s deleted\n", kind, a.name)
		return nil
	}
}

func secretRekey(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	r, err := newClient(c).RekeySecrets(c.Context)
	if err != nil {
		return err
	}
	return show(c, r, func(w io.Writer) {
		fmt.Fprintf(w, "%d secret version(s) sealed again with key %s\n", r.Rekeyed, r.Key)
		if len(r.Remaining) == 0 {
			fmt.Fprintln(w, "no secret is sealed with another key: keys other than the first may leave the keyring")
			return
		}
		for k, n := range r.Remaining {
			fmt.Fprintf(w, "%d version(s) remain sealed with key %s\n", n, k)
		}
	})
}

func serviceRestart(c *cli.Context) error {
	a, err := args(c, "ID")
	if err != nil {
		return err
	}
	js, err := newClient(c).RestartService(c.Context, structs.JobID(a[0]))
	if err != nil {
		return err
	}
	return show(c, js, func(w io.Writer) {
		fmt.Fprintf(w, "service %s: its %d replicas restart one at a time, at least %d running throughout; job status shows each task's config versions\n",
			js.Job.ID, js.Job.Replicas, max(js.Job.MinAvailable, 1))
	})
}

// configLine is one of a job's configs as job status shows it.
func configLine(c structs.ConfigRef) string {
	s := fmt.Sprintf("%s %s", c.Kind(), c.Name())
	switch {
	case c.Object():
		s += " (" + string(c.Owner) + ")"
	case c.ConfigMap != "":
		s = "ConfigMap " + c.ConfigMap
	default:
		s = "Kubernetes Secret " + c.Secret
	}
	if c.Env {
		return s + " as environment variables"
	}
	return s + " at " + c.MountPath
}

// taskConfigs is a task's CONFIGS column: "train:2,wandb:1".
func taskConfigs(t *structs.Task) string {
	s := make([]string, len(t.Configs))
	for i, c := range t.Configs {
		s[i] = fmt.Sprintf("%s:%d", c.Name, c.Version)
	}
	return strings.Join(s, ",")
}

// restartLine says how far a service's restart is ("" when none runs):
// of the service's replicas, how many run as placed since the restart.
// The one stopping for it is not restarted yet (it was counted in
// neither, so the line said "0 of 1" of two replicas).
func restartLine(js *wire.JobStatus) string {
	j := js.Job
	if j.Restart == 0 || j.State.Ended() {
		return ""
	}
	replicas := j.ShapeAt(j.Shape).Replicas
	old, done := 0, 0
	for _, t := range js.Tasks {
		if t.Attempt != j.Attempt || t.Executor != "" || !t.State.HoldsResources() {
			continue
		}
		switch {
		case t.Restart < j.Restart:
			old++
		case t.State == structs.TaskRunning:
			done++
		}
	}
	if old == 0 && done >= replicas {
		return ""
	}
	return fmt.Sprintf("%d of %d replicas restarted, one at a time", min(done, replicas), replicas)
}
