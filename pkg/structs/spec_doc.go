package structs

// The document a spec's text holds, found before any field is read. The
// command line (which refuses a spec file that holds no spec before any
// request, naming the file), the client (which reads a spec's name for
// the request's path) and decoding all find it here, so they agree on
// what is empty:
//
//   - Nothing, whitespace, comments, a byte-order mark and document
//     markers hold no spec: the text is empty.
//   - A document that holds nothing (--- or ... with nothing after it)
//     is no document: a spec that ends with --- is one spec, as kubectl
//     takes it.
//   - A document that is null (null, ~) holds no spec either, but says so:
//     it was written, so the message names it.
//   - Two documents that hold something are refused.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// NoSpecError is the error for a spec's text that holds no spec.
type NoSpecError struct {
	What string // the spec, as messages name it: "job spec"
	// Null is the null document as written ("~", "null"); "" when the text
	// holds no document at all (it is empty).
	Null string
}

func (e *NoSpecError) Error() string {
	if e.Null != "" {
		return fmt.Sprintf("%s is null (%s): write a mapping of %s", e.What, e.Document(), specFields(e.What))
	}
	return fmt.Sprintf("%s is empty (only comments or whitespace): write a mapping of %s", e.What, specFields(e.What))
}

// Document says what the null document is: "the document is ~".
func (e *NoSpecError) Document() string { return "the document is " + e.Null }

// fieldsOf names the main fields of each spec a user writes, for
// messages that say what to write.
var fieldsOf = map[string]string{
	"job spec":       "kind, name, command and resources",
	"quota spec":     "scope, limits and weight",
	"pool spec":      "name, project, members, lendIdle, maxPreemptNotice and minRuntime",
	"node spec":      "name, cpu, memory and accelerators",
	"cluster spec":   "name, backend and redis",
	"cluster config": "clusters, pools, nodes and quotas",
}

// specFields says what the spec what names holds: "fields such as kind,
// name, command and resources", or "fields".
func specFields(what string) string {
	if f, ok := fieldsOf[what]; ok {
		return "fields such as " + f
	}
	return "fields"
}

// SpecWanted says what to write for the spec what names ("job spec"):
// "a job spec in YAML or JSON, a mapping of fields such as kind, name,
// command and resources".
func SpecWanted(what string) string {
	return fmt.Sprintf("a %s in YAML or JSON, a mapping of %s", what, specFields(what))
}

// SpecRoot returns the mapping at the root of a spec's text data: its one
// document that holds something. It refuses text over MaxSpecBytes, bad
// UTF-8, text that does not parse, text that holds no spec (a
// *NoSpecError), several documents and a root that is not a mapping. what
// names the spec in messages ("job spec").
func SpecRoot(data []byte, what string) (*yaml.Node, error) {
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("%s is %d bytes: at most %d are allowed", what, len(data), MaxSpecBytes)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%s is not valid UTF-8 (first bad byte at offset %d)", what, firstBadUTF8(data))
	}
	if blankText(data) {
		return nil, &NoSpecError{What: what}
	}
	text, err := parserText(data, what)
	if err != nil {
		return nil, err
	}
	root, err := document(text, what)
	if err != nil {
		root, err = withoutTabLines(text, what, err)
	}
	if err != nil {
		return nil, err
	}
	return mappingRoot(root, what)
}

// document parses text and returns the root node of its one document
// that holds something (spec_text.go says what text the parser reads).
func document(text []byte, what string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var root *yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		switch {
		case errors.Is(err, io.EOF):
			if root == nil {
				return nil, &NoSpecError{What: what}
			}
			return root, nil
		case err != nil && root != nil:
			// A value after ... or after a JSON value: the parser's line
			// for it is not reliable, so none is given.
			return nil, fmt.Errorf("%s holds several YAML documents (more follows the first): the spec must be a single document", what)
		case err != nil:
			return nil, fmt.Errorf("parse %s: %s", what, strings.Join(strings.Fields(err.Error()), " "))
		case emptyDocument(&doc):
		case root != nil:
			return nil, fmt.Errorf("%s holds several YAML documents (a second starts at line %d): the spec must be a single document", what, doc.Line)
		default:
			root = doc.Content[0]
		}
	}
}

// blankText reports whether data is nothing but whitespace, comments,
// document markers and a byte-order mark first. It reads lines, not YAML:
// a line of tabs is whitespace to whoever wrote it, though not to the
// parser. Only when every line is blank can no line be a block scalar's.
func blankText(data []byte) bool {
	for _, line := range strings.Split(strings.TrimPrefix(string(data), "\ufeff"), "\n") {
		l := strings.TrimSpace(line)
		if l != "" && l[0] != '#' && !docMarker(strings.TrimRightFunc(line, unicode.IsSpace)) {
			return false
		}
	}
	return true
}

// docMarker reports whether line (without trailing space) is --- or ...,
// maybe followed by a comment. A marker starts its line: " ---" is text.
func docMarker(line string) bool {
	if !strings.HasPrefix(line, "---") && !strings.HasPrefix(line, "...") {
		return false
	}
	rest := line[3:]
	return rest == "" || (rest[0] == ' ' || rest[0] == '\t') && strings.TrimSpace(rest)[0] == '#'
}

// emptyDocument reports whether doc holds nothing: no node, or one the
// parser made up for a document marker with nothing after it. A null
// written as null, ~ or !!null, or an anchor on nothing, is a value.
func emptyDocument(doc *yaml.Node) bool {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return n.Kind == yaml.ScalarNode && n.Value == "" && n.Style == 0 && n.Anchor == ""
}

// mappingRoot returns root when it is a mapping, and says what it is
// otherwise.
func mappingRoot(root *yaml.Node, what string) (*yaml.Node, error) {
	switch kind := plainKind(root); {
	case root.Kind == yaml.MappingNode:
		return root, nil
	case root.Kind == yaml.SequenceNode:
		return nil, fmt.Errorf("%s is a YAML or JSON array: write a mapping of %s", what, specFields(what))
	case root.Kind == yaml.ScalarNode && kind == "null":
		null := root.Value
		if null == "" {
			null = "null" // !!null or an anchor on nothing
		}
		return nil, &NoSpecError{What: what, Null: null}
	case root.Kind == yaml.ScalarNode:
		if kind != "string" && kind != "bool" {
			kind = "number"
		}
		return nil, fmt.Errorf("%s is a YAML or JSON %s: write a mapping of %s", what, kind, specFields(what))
	}
	return nil, fmt.Errorf("%s is not a mapping: write a mapping of %s", what, specFields(what))
}

// SpecField returns the top-level field of a spec's text as written, when
// it is a scalar ("" when the spec has no such field): the name or scope
// a command puts in a request's path before the coordinator decodes the
// spec. Its errors are SpecRoot's.
func SpecField(data []byte, what, field string) (string, error) {
	root, err := SpecRoot(data, what)
	if err != nil {
		return "", err
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k, v := root.Content[i], root.Content[i+1]; k.Value == field && v.Kind == yaml.ScalarNode {
			return v.Value, nil
		}
	}
	return "", nil
}
