package structs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const textSpec = "kind: command\nname: a\ncommand: [run]\nresources: {cpu: 1}\n"

// A line of only spaces and tabs is an empty line, as in YAML 1.2,
// wherever it is outside a block scalar: the parser refused a tab on it
// ("found a tab character that violates indentation", or "found character
// that cannot start any token" after a quoted value).
func TestSpecTextLineOfTabs(t *testing.T) {
	t.Parallel()
	want, err := ParseJobSpec([]byte(textSpec))
	require.NoError(t, err)
	for _, text := range []string{
		"kind: command\n\t\nname: a\ncommand: [run]\nresources: {cpu: 1}\n",
		"kind: command\nname: a\ncommand: [run]\nresources: {cpu: 1}\n\t\t\n\t",
		"\t\n" + textSpec,
		"\ufeff\t\n" + textSpec,
		"kind: 'command'\n \t \nname: a\ncommand: [run]\nresources: {cpu: 1}\n",
		"kind: command\r\n\t\r\nname: a\r\ncommand: [run]\r\nresources: {cpu: 1}\r\n",
		"kind: command\nname: a\ncommand:\n  - run\n  \t\nresources:\n  cpu: 1\n\t\n",
		"kind: command\nname: a\ncommand: [\n\t\n  run]\nresources:\n  cpu: 1\n  \t\n",
		"# a\n\t# with a comment after a tab\n" + textSpec,
	} {
		got, err := ParseJobSpec([]byte(text))
		require.NoError(t, err, "%q", text)
		assert.Equal(t, want, got, "%q", text)
	}
}

// Within a block scalar a line is text from its indentation on: one of
// spaces and tabs that parses is kept as written; one that starts with a
// tab (no text: indentation is spaces) is an empty line of the scalar;
// one that starts with a space, in text that does not parse as written,
// is refused, naming it, rather than emptied.
func TestSpecTextLineOfTabsInBlockScalar(t *testing.T) {
	t.Parallel()
	script := func(lines ...string) string {
		return "kind: command\nname: a\ncommand:\n  - sh\n  - -c\n  - |\n" + strings.Join(lines, "\n") + "\nresources: {cpu: 1}\n"
	}
	for _, tc := range []struct{ text, want string }{
		{script("    echo a", "    \t", "    echo b"), "echo a\n\t\necho b\n"},
		{script("    echo a", "\t", "    echo b"), "echo a\n\necho b\n"},
		{script("    echo a", "\t\t", "    echo b", "\t"), "echo a\n\necho b\n"},
	} {
		s, err := ParseJobSpec([]byte(tc.text))
		require.NoError(t, err, "%q", tc.text)
		assert.Equal(t, []string{"sh", "-c", tc.want}, s.Command, "%q", tc.text)
	}

	_, err := ParseJobSpec([]byte(script("    echo a", "  \t", "    echo b")))
	assert.EqualError(t, err, "parse job spec: line 8 holds only spaces and tabs, within the block scalar (| or >) of line 6, where they may be text: "+
		"empty the line, or indent it with spaces only (YAML takes no tab as indentation)")
	_, err = ParseJobSpec([]byte("\t\n" + script("    echo a", "    \t", "    echo b")))
	assert.EqualError(t, err, "parse job spec: line 9 holds only spaces and tabs, within the block scalar (| or >) of line 7, where they may be text: "+
		"empty the line, or indent it with spaces only (YAML takes no tab as indentation)")
}

// Tabs elsewhere are refused as before, and a line of spaces and tabs
// changes nothing in what else is wrong with the text.
func TestSpecTextTabsStillRefused(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"kind: command\n\tname: a\n":                 "parse job spec: yaml: line 2: found a tab character that violates indentation",
		"kind: command\n\t\nname: [a\n":              "parse job spec: yaml: line 2: did not find expected ',' or ']'",
		"kind: command\n\t\nname: a\n---\nname: b\n": "job spec holds several YAML documents (a second starts at line 4): the spec must be a single document",
	} {
		_, err := ParseJobSpec([]byte(text))
		assert.EqualError(t, err, want, "%q", text)
	}
}

// A %YAML 1.2 directive is taken (the parser took only 1.1): specs are
// YAML 1.2. A version other than 1.1 or 1.2 is refused, naming the line.
func TestSpecTextYAMLDirective(t *testing.T) {
	t.Parallel()
	want, err := ParseJobSpec([]byte(textSpec))
	require.NoError(t, err)
	for _, text := range []string{
		"%YAML 1.2\n---\n" + textSpec,
		"%YAML 1.1\n---\n" + textSpec,
		"\ufeff# train\n\n%YAML 1.2 # the version\n---\n" + textSpec,
		"%YAML\t1.2\r\n--- \r\n" + textSpec,
		"%YAML 1.2\n%TAG !a! tag:example.com,2026:\n---\n" + textSpec,
		"%YAML 1.2\n---\n" + textSpec + "---\n",
	} {
		got, err := ParseJobSpec([]byte(text))
		require.NoError(t, err, "%q", text)
		assert.Equal(t, want, got, "%q", text)
	}
	got, err := ParseJobSpec([]byte("%YAML 1.2\n---\n" + textSpec + "labels: {ib: yes}\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"ib": "yes"}, got.Labels, "read as YAML 1.2: yes is text")

	for text, want := range map[string]string{
		"%YAML 2.0\n---\n" + textSpec:            "parse job spec: line 1: %YAML 2.0 is not allowed: write %YAML 1.2, or no directive",
		"# c\n%YAML 1.3\n---\n" + textSpec:       "parse job spec: line 2: %YAML 1.3 is not allowed: write %YAML 1.2, or no directive",
		"%YAML 1.2\n%YAML 1.2\n---\n" + textSpec: "parse job spec: yaml: line 1: found duplicate %YAML directive",
		"%YAML 1.2\n":                            "parse job spec: yaml: line 1: did not find expected <document start>",
		"%YAML 1.2\n---\n":                       "job spec is empty (only comments or whitespace): write a mapping of fields such as kind, name, command and resources",
	} {
		_, err := ParseJobSpec([]byte(text))
		assert.EqualError(t, err, want, "%q", text)
	}
}
