package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/atom-sched/atom/pkg/structs"
)

// Output formats.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

func outputFlag() *cli.StringFlag {
	return &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "output format: table, json or yaml (default: table)"}
}

// format returns the -o given closest to the command, or table.
func format(c *cli.Context) (string, error) {
	f := ""
	for _, cc := range c.Lineage() {
		if f = cc.String("output"); f != "" {
			break
		}
	}
	switch f {
	case "", formatTable:
		return formatTable, nil
	case formatJSON, formatYAML:
		return f, nil
	}
	return "", usagef("-o %q is not allowed: use table, json or yaml", f)
}

// show prints v as JSON or YAML, or calls table for people.
func show(c *cli.Context, v any, table func(w io.Writer)) error {
	f, err := format(c)
	if err != nil {
		return err
	}
	w := c.App.Writer
	switch f {
	case formatJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case formatYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode output: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
	table(w)
	return nil
}

// tab returns a tabwriter for aligned columns; call Flush when done.
func tab(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// row writes cells separated by tabs.
func row(w io.Writer, cells ...any) {
	s := make([]string, len(cells))
	for i, c := range cells {
		s[i] = fmt.Sprint(c)
		if s[i] == "" {
			s[i] = "-"
		}
	}
	fmt.Fprintln(w, strings.Join(s, "\t"))
}

// when formats a time for tables ("-" when unset).
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// now is the clock of ages, durations and the times job submit --wait
// prints (tests set it).
var now = time.Now

// age is how long ago t was, as kubectl shows it ("3m12s", "5h", "2d3h";
// "-" when unset).
func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now().Sub(t))
}

// span is how long something that started at start has run: until end,
// or until now while end is unset ("-" when it never started).
func span(start, end time.Time) string {
	switch {
	case start.IsZero():
		return "-"
	case end.IsZero():
		end = now()
	}
	return duration.HumanDuration(end.Sub(start))
}

// amount formats a quota amount in the key's units.
func amount(k structs.ResourceKey, v int64) string {
	switch k {
	case structs.KeyCPU:
		return structs.FormatMilliCPU(v)
	case structs.KeyMemory:
		return structs.FormatBytes(v)
	}
	return fmt.Sprint(v)
}

// resourceList formats "cpu=4 gpu/A100=2", keys in order.
func resourceList(l structs.ResourceList) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, k+"="+amount(structs.ResourceKey(k), l[structs.ResourceKey(k)]))
	}
	return strings.Join(out, " ")
}

// listWidth bounds a list cell of a table (a config's keys, the jobs
// that use it), so that one long row does not push every row's next
// columns off the screen.
const listWidth = 48

// fit joins names with ", " in at most width characters: as many as fit,
// then "and N more" (at least one name, however long).
func fit(names []string, width int) string {
	all := strings.Join(names, ", ")
	if utf8.RuneCountInString(all) <= width {
		return all
	}
	for k := len(names) - 1; k > 1; k-- {
		if s := fmt.Sprintf("%s and %d more", strings.Join(names[:k], ", "), len(names)-k); utf8.RuneCountInString(s) <= width {
			return s
		}
	}
	return fmt.Sprintf("%s and %d more", names[0], len(names)-1)
}
