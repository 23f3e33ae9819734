package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// pageNames are the templates of templates/ that are whole pages; each
// defines "content" (the part the script refreshes when the page is
// live) and optionally "head" (above it, not refreshed: filters, forms).
var pageNames = []string{"overview", "queue", "jobs", "job", "quotas", "nodes", "signin", "error"}

// parsePages parses every page with the layout. A template that does not
// parse is a build error, caught by any test.
func parsePages() map[string]*template.Template {
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/parts.html"))
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(files, "templates/"+name+".html"))
	}
	return out
}

// funcs are the templates' helpers; formatting happens in Go (format.go),
// templates only lay out.
var funcs = template.FuncMap{
	"statusText": http.StatusText,
}

// chrome is what the layout shows around every page.
type chrome struct {
	Title  string
	Nav    string // the page's entry in the navigation
	User   string
	Admin  bool
	CSRF   string
	Assets string
	Now    string // when the page was rendered, for "updated"
	Live   bool   // the script refreshes "content"
	Data   any
}

// render writes page name with data; live requests get only its content.
func (s *server) render(w http.ResponseWriter, r *http.Request, u *session, status int, name, title string, data any) {
	c := chrome{Title: title, Nav: name, Assets: s.assets, Now: s.clock().UTC().Format("15:04:05 UTC"), Data: data,
		Live: name != "signin" && name != "error"}
	if u != nil {
		c.User, c.Admin, c.CSRF = string(u.user.Name), u.user.Admin, u.csrf
	}
	tmpl, entry := s.pages[name], "layout.html"
	if live(r) {
		entry = "content"
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, entry, c); err != nil {
		// A template that fails on some data is a bug: say so plainly.
		slog.Error("ui: render page", "page", name, "err", err)
		http.Error(w, "the dashboard could not render this page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

type errorView struct {
	Status  int
	Message string
}

// fail answers with an error page (plain text to the script).
func (s *server) fail(w http.ResponseWriter, r *http.Request, u *session, status int, msg string) {
	if live(r) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(msg + "\n"))
		return
	}
	s.render(w, r, u, status, "error", http.StatusText(status), errorView{Status: status, Message: msg})
}

// serveStatic: GET /ui/static/{file}. Links carry ?v=<hash of the
// files>, so browsers may keep them.
func (s *server) serveStatic(w http.ResponseWriter, r *http.Request, _ *session) {
	b, err := fs.ReadFile(s.static, r.PathValue("file"))
	if err != nil {
		s.fail(w, r, nil, http.StatusNotFound, "There is no file "+r.URL.Path+" here.")
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(r.URL.Path, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(r.URL.Path, ".svg"):
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Header().Set("Cache-Control", "public, max-age=86400")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}

// assetsHash is a short hash of the static files.
func assetsHash(fsys fs.FS) string {
	h := sha256.New()
	_ = fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(fsys, path)
			h.Write([]byte(path))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}
