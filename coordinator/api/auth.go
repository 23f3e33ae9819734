package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/atom-sched/atom/coordinator/state"
	"github.com/atom-sched/atom/pkg/structs"
)

// TokenFile is the tokens file, in YAML or JSON:
//
//	users:
//	- {name: alice, token: 3c1f...e9, admin: true}
//	- {name: bob, token: 77a0...41}
//
// Names are user names as jobs' owners and pools' members spell them;
// tokens are secrets of at least MinTokenLen characters, unique.
type TokenFile struct {
	Users []User `json:"users"`
}

// User is one entry of the tokens file.
type User struct {
	Name  structs.UserID `json:"name"`
	Token string         `json:"token"`
	Admin bool           `json:"admin,omitempty"`
}

// MinTokenLen is the shortest user token accepted.
const MinTokenLen = 16

// LoadTokens reads and validates a tokens file.
func LoadTokens(path string) (TokenFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return TokenFile{}, fmt.Errorf("load tokens: %w", err)
	}
	f, err := ParseTokens(b)
	if err != nil {
		return TokenFile{}, fmt.Errorf("load tokens %s: %w", path, err)
	}
	return f, nil
}

// ParseTokens decodes a tokens file strictly (unknown fields are errors)
// and validates it. Messages never quote a token.
func ParseTokens(data []byte) (TokenFile, error) {
	var f TokenFile
	if !utf8.Valid(data) {
		return f, fmt.Errorf("tokens file is not valid UTF-8")
	}
	if err := structs.DecodeStrict(data, &f, "tokens file"); err != nil {
		return TokenFile{}, fmt.Errorf("parse tokens file: %s (a tokens file is users: [{name, token, admin}])", redact(err.Error()))
	}
	names, tokens := map[structs.UserID]bool{}, map[string]bool{}
	for i, u := range f.Users {
		field := fmt.Sprintf("users[%d]", i)
		if err := structs.ValidateTypeName(field+".name", string(u.Name)); err != nil {
			return TokenFile{}, err
		}
		if names[u.Name] {
			return TokenFile{}, fmt.Errorf("%s.name %q is not allowed: each user appears once", field, u.Name)
		}
		names[u.Name] = true
		if len(u.Token) < MinTokenLen || strings.IndexFunc(u.Token, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
			return TokenFile{}, fmt.Errorf("%s.token (user %s) is not allowed: use at least %d printable characters without spaces", field, u.Name, MinTokenLen)
		}
		if tokens[u.Token] {
			return TokenFile{}, fmt.Errorf("%s.token (user %s) is not allowed: another user has the same token", field, u.Name)
		}
		tokens[u.Token] = true
	}
	if len(f.Users) == 0 {
		return TokenFile{}, fmt.Errorf("tokens file lists no users: nobody could use the API: add users: [{name, token, admin}]")
	}
	return f, nil
}

// redact hides the values a YAML decoder message quotes in backquotes,
// which could be a token; JSON decoder messages name fields, not values.
func redact(msg string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(msg, '`')
		if i < 0 {
			break
		}
		j := strings.IndexByte(msg[i+1:], '`')
		if j < 0 {
			break
		}
		b.WriteString(msg[:i] + "(value not shown)")
		msg = msg[i+1+j+1:]
	}
	b.WriteString(msg)
	return b.String()
}

// caller is the authenticated user of a request.
type caller struct {
	user  structs.UserID
	admin bool
}

func hashToken(t string) [sha256.Size]byte { return sha256.Sum256([]byte(t)) }

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// authenticate finds the user whose token r carries. Lookup is by the
// token's SHA-256, so timing reveals nothing about stored tokens.
func (s *server) authenticate(r *http.Request) (caller, error) {
	tok, ok := bearer(r)
	if !ok {
		return caller{}, errorf(http.StatusUnauthorized, "no token: send Authorization: Bearer <token> (coordinator --token or ATOM_TOKEN)")
	}
	u := s.users[hashToken(tok)]
	if u == nil {
		return caller{}, errorf(http.StatusUnauthorized, "the token is not valid: use a user token from the coordinator's tokens file")
	}
	return caller{user: u.Name, admin: u.Admin}, nil
}

// sameToken compares an offered token with a stored one in constant time.
func sameToken(offered, stored string) bool {
	return stored != "" && subtle.ConstantTimeCompare([]byte(offered), []byte(stored)) == 1
}

// projects returns the projects whose pools list u as a member.
func projects(st *state.State, u structs.UserID) map[structs.ProjectID]bool {
	out := map[structs.ProjectID]bool{}
	for _, p := range st.Pools {
		if p.Project != "" && p.HasMember(u) {
			out[p.Project] = true
		}
	}
	return out
}

// canSeeJob reports whether c may see and operate job j: admins all jobs,
// users their own and their projects' (given by projects(st, c.user)).
func (c caller) canSeeJob(j *structs.Job, mine map[structs.ProjectID]bool) bool {
	return c.admin || j.Owner == c.user || (j.Project != "" && mine[j.Project])
}

// canSeeScope reports whether c may read scope's quota: admins all, users
// their own and their projects'.
func (c caller) canSeeScope(scope structs.Scope, mine map[structs.ProjectID]bool) bool {
	if c.admin || scope == structs.UserScope(c.user) {
		return true
	}
	p, ok := strings.CutPrefix(string(scope), "project:")
	return ok && mine[structs.ProjectID(p)]
}
