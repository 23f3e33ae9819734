package structs

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Text that holds no spec says so, the same for every spec: nothing,
// whitespace, comments, a byte-order mark and document markers are empty
// (a byte-order mark used to make the text a document of its own); a
// document that is null is null, not "only comments or whitespace", and
// each message says what the spec is.
func TestSpecTextWithoutSpec(t *testing.T) {
	t.Parallel()
	const (
		jobEmpty = "job spec is empty (only comments or whitespace): write a mapping of fields such as kind, name, command and resources"
	)
	for _, tc := range []struct{ text, null string }{
		{"", ""},
		{" \n\t\r\n", ""},
		{"\t# kind: command\n", ""},
		{"--- # nothing yet\n...\t# still nothing\n", ""},
		{"\ufeff", ""},
		{"\ufeff\n", ""},
		{"\ufeff# train.yaml, to be written\n  # kind: command\n", ""},
		{"---\n", ""},
		{"\ufeff---\n# later\n...\n---\n", ""},
		{"~", "~"},
		{"null\n", "null"},
		{"# none yet\nNULL\n...\n", "NULL"},
		{"\ufeff--- ~\n---\n", "~"},
		{"!!null\n", "null"},
	} {
		_, err := ParseJobSpec([]byte(tc.text))
		var none *NoSpecError
		require.ErrorAs(t, err, &none, "%q", tc.text)
		assert.Equal(t, tc.null, none.Null, "%q", tc.text)
		if tc.null == "" {
			assert.EqualError(t, err, jobEmpty, "%q", tc.text)
		} else {
			assert.EqualError(t, err, "job spec is null (the document is "+tc.null+"): write a mapping of fields such as kind, name, command and resources", "%q", tc.text)
		}
	}

	// Each spec names its own fields.
	for _, tc := range []struct {
		parse func([]byte) error
		text  string
		want  string
	}{
		{func(b []byte) error { _, err := ParseQuotaSpec(b); return err }, "\ufeff",
			"quota spec is empty (only comments or whitespace): write a mapping of fields such as scope, limits and weight"},
		{func(b []byte) error { _, err := ParsePoolSpec(b); return err }, "# pool\n",
			"pool spec is empty (only comments or whitespace): write a mapping of fields such as name, project, members, lendIdle, maxPreemptNotice and minRuntime"},
		{func(b []byte) error { _, err := ParseNodeSpec(b); return err }, "~\n",
			"node spec is null (the document is ~): write a mapping of fields such as name, cpu, memory and accelerators"},
		{func(b []byte) error { _, err := ParseClusterConfig(b); return err }, "null",
			"cluster config is null (the document is null): write a mapping of fields such as clusters, pools, nodes and quotas"},
		{func(b []byte) error { _, err := ParseJobSpec(b); return err }, "[kind, command]",
			"job spec is a YAML or JSON array: write a mapping of fields such as kind, name, command and resources"},
		{func(b []byte) error { return DecodeStrict(b, &struct{}{}, "tokens file") }, "\ufeff\n",
			"tokens file is empty (only comments or whitespace): write a mapping of fields"},
	} {
		assert.EqualError(t, tc.parse([]byte(tc.text)), tc.want, "%q", tc.text)
	}
}

// A byte-order mark before a spec, and document markers with nothing
// after them, leave the spec as it is.
func TestSpecTextAroundASpec(t *testing.T) {
	t.Parallel()
	const spec = "kind: command\nname: a\ncommand: [true]\nresources: {cpu: 1}\n"
	for _, text := range []string{
		"\ufeff" + spec,
		spec + "---\n",
		spec + "...\n---\n",
		"\ufeff---\n" + spec + "---\n# more later\n",
	} {
		s, err := ParseJobSpec([]byte(text))
		require.NoError(t, err, "%q", text)
		assert.Equal(t, "a", s.Name)
	}
	_, err := ParseJobSpec([]byte(spec + "...\n---\n" + spec))
	assert.EqualError(t, err, "job spec holds several YAML documents (a second starts at line 6): the spec must be a single document")
	_, err = ParseJobSpec([]byte(spec + "---\n---\n~\n"))
	assert.EqualError(t, err, "job spec holds several YAML documents (a second starts at line 6): the spec must be a single document")
	assert.False(t, errors.As(err, new(*NoSpecError)))
}
