package docs_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/atom-sched/atom/pkg/structs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository's root, two levels up from this package.
const root = "../.."

// markdown returns every Markdown file of the repository, relative to
// root, but those of vendored or cached trees.
func markdown(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "vendor", "node_modules", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, out, "README.md")
	return out
}

// doc is a Markdown file split into its prose lines (code blocks and
// inline code removed) and its fenced code blocks.
type doc struct {
	prose   []string
	blocks  []block
	anchors map[string]bool
}

type block struct {
	lang, text string
	line       int
}

var (
	fence      = regexp.MustCompile("^\\s*```")
	inlineCode = regexp.MustCompile("`[^`]*`")
	link       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

func read(t *testing.T, rel string) doc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	d := doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	var cur *block
	for i, line := range strings.Split(string(data), "\n") {
		if fence.MatchString(line) {
			if cur == nil {
				cur = &block{lang: strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "`")), line: i + 1}
			} else {
				d.blocks = append(d.blocks, *cur)
				cur = nil
			}
			d.prose = append(d.prose, "")
			continue
		}
		if cur != nil {
			cur.text += line + "\n"
			d.prose = append(d.prose, "")
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[1])
			if n := seen[s]; n > 0 {
				d.anchors[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				d.anchors[s] = true
			}
			seen[s]++
		}
		d.prose = append(d.prose, inlineCode.ReplaceAllString(line, ""))
	}
	return d
}

// slug is GitHub's anchor for a heading: lowercase, markup and
// punctuation dropped, spaces as hyphens.
func slug(h string) string {
	h = strings.ReplaceAll(h, "`", "")
	h = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// Every relative link of every document names a file or directory of the
// repository, and an #anchor names a heading of the Markdown file linked.
func TestRelativeLinksResolve(t *testing.T) {
	files := markdown(t)
	docs := map[string]doc{}
	for _, f := range files {
		docs[f] = read(t, f)
	}
	for _, f := range files {
		for i, line := range docs[f].prose {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				where := fmt.Sprintf("%s:%d: link %s", f, i+1, target)
				dest := f
				if path != "" {
					dest = filepath.Clean(filepath.Join(filepath.Dir(f), path))
					if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
						t.Errorf("%s: %s does not exist", where, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				d, ok := docs[dest]
				if !ok {
					t.Errorf("%s: an anchor into %s, which is not a Markdown file", where, dest)
					continue
				}
				assert.True(t, d.anchors[anchor], "%s: %s has no heading #%s", where, dest, anchor)
			}
		}
	}
}

// The YAML the documents show is what the code accepts: job specs (a
// block starting with kind:), mpi and spark sections (checked inside a
// job of their kind) and cluster configs (a block starting with
// clusters:).
func TestShownSpecsParse(t *testing.T) {
	checked := 0
	readmeKinds := map[string]bool{}
	for _, f := range markdown(t) {
		for _, b := range read(t, f).blocks {
			if shellLangs[b.lang] {
				// A spec written with a here-document (cat > x.yaml <<'YAML').
				for _, m := range hereDoc.FindAllStringSubmatch(b.text, -1) {
					if m[1] == m[3] && strings.HasPrefix(m[2], "kind:") {
						checked++
						assert.NoError(t, parseJob(m[2]), "%s:%d:\n%s", f, b.line, m[2])
						readmeKinds[kindOf(m[2])] = readmeKinds[kindOf(m[2])] || f == "README.md"
					}
				}
			}
			if b.lang != "yaml" {
				continue
			}
			where := fmt.Sprintf("%s:%d", f, b.line)
			first := strings.TrimSpace(b.text)
			var err error
			switch {
			case strings.HasPrefix(first, "kind:"):
				err = parseJob(b.text)
				readmeKinds[kindOf(b.text)] = readmeKinds[kindOf(b.text)] || f == "README.md"
			case strings.HasPrefix(first, "mpi:"):
				err = parseJob("kind: mpi\nname: doc\ncommand: [./train]\nreplicas: 2\nresources: {cpu: \"1\"}\n" + b.text)
			case strings.HasPrefix(first, "spark:"):
				err = parseJob("kind: spark\nname: doc\n" + b.text)
			case strings.HasPrefix(first, "clusters:"):
				_, err = structs.ParseClusterConfig([]byte(b.text))
			default:
				continue
			}
			checked++
			assert.NoError(t, err, "%s:\n%s", where, b.text)
		}
	}
	assert.GreaterOrEqual(t, checked, 4)
	for _, k := range []string{"mpi", "spark", "service", "command"} {
		assert.True(t, readmeKinds[k], "the README shows a %s job", k)
	}
}

// hereDoc is a here-document of a shell block: <<'END' ... END.
var hereDoc = regexp.MustCompile(`<<'?(\w+)'?\n((?s:.*?))\n(\w+)\n`)

// kindOf is a spec's kind: its first line's value.
func kindOf(spec string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(spec), "\n")
	kind, _, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(first, "kind:")), " ")
	return kind
}

func parseJob(text string) error {
	s, err := structs.ParseJobSpec([]byte(text))
	if err != nil {
		return err
	}
	_, err = s.ToJob("doc")
	return err
}

// sectionRef is how the programs' messages and help name a document's
// section: README.md, "Jobs" (the path from the repository's root).
var sectionRef = regexp.MustCompile(`([\w./-]*README\.md), \\?"([^"\\]+)\\?"`)

// Every section the programs name (help texts, error messages) is a
// heading of the document they name.
func TestSectionsNamedInCodeExist(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "vendor", "node_modules", "bin", "test":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range sectionRef.FindAllStringSubmatch(string(src), -1) {
			checked++
			where := fmt.Sprintf("%s: %s, %q", p, m[1], m[2])
			if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
				t.Errorf("%s: %s does not exist", where, m[1])
				continue
			}
			assert.True(t, read(t, m[1]).anchors[slug(m[2])], "%s: %s has no heading %q", where, m[1], m[2])
		}
		return nil
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, checked, 3, "job submit --help's, the API's and the cache mount's")
}
