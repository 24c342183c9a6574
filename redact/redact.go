// Package redact hides credentials in text that is shown to people: the
// user information of URLs, of CVS roots and of scp-like addresses with a
// password, wherever they appear in a message or a spec.
package redact

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
)

// Hidden stands for the user information taken out.
const Hidden = "***"

// URLs replaces with "***" the user information of every source address
// in s:
//
//   - a URL, scheme://user:password@host/path: everything up to the last
//     "@" of its authority, so that a password holding "@" is hidden whole;
//   - a CVS root, :method:user:password@host:/path (pserver, ext, gserver
//     and the other methods, with or without method options);
//   - an scp-like address with a password, user:password@host:path.
//
// A user alone is hidden in a URL and a CVS root, where it may be a token,
// but not in an scp-like address (git@host:path), where it never is.
// Addresses end at white space and quotes; each is parsed on its own.
func URLs(s string) string {
	if !strings.Contains(s, "@") {
		// Every form hides what comes before an "@": most text has none.
		return s
	}
	var b strings.Builder
	start := 0 // where the word being read begins
	for i := 0; i <= len(s); i++ {
		if i < len(s) && !isSeparator(s[i]) {
			continue
		}
		if tok := s[start:i]; strings.Contains(tok, "@") {
			b.WriteString(token(tok))
		} else {
			b.WriteString(tok)
		}
		if i < len(s) {
			b.WriteByte(s[i])
		}
		start = i + 1
	}
	return b.String()
}

// isSeparator says whether c ends an address: white space, or a quote or
// bracket that text puts around one.
func isSeparator(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v', '"', '\'', '`', '<', '>':
		return true
	}
	return false
}

// token redacts one word of text, which may hold several addresses
// (a=https://…,b=https://…).
func token(t string) string {
	if strings.Contains(t, "://") || strings.Contains(t, `:\/\/`) {
		return urls(cvsRoots(t))
	}
	if cvsMethod.MatchString(t) {
		return cvsRoots(t)
	}
	return scpLike(t)
}

// urls hides the user information of every scheme://authority in t.
func urls(t string) string {
	var b strings.Builder
	from := 0
	for {
		k, sep := schemeEnd(t[from:])
		if k < 0 {
			break
		}
		k += from
		a := k + sep
		if !hasScheme(t[from:k]) {
			b.WriteString(t[from:a])
			from = a
			continue
		}
		// The authority ends where the path, query or fragment begins; its
		// last "@" ends the user information, whatever the password holds.
		e := len(t)
		if n := strings.IndexAny(t[a:], "/?#"); n >= 0 {
			e = a + n
		}
		b.WriteString(t[from:a])
		if at := strings.LastIndexByte(t[a:e], '@'); at >= 0 {
			b.WriteString(Hidden)
			b.WriteString(t[a+at : e])
		} else {
			b.WriteString(t[a:e])
		}
		from = e
	}
	b.WriteString(t[from:])
	return b.String()
}

// schemeEnd finds the "://" after a scheme in t, or the ":\/\/" of a
// URL written in JSON text; it answers where it starts and how long it
// is, or -1.
func schemeEnd(t string) (int, int) {
	k := strings.Index(t, "://")
	j := strings.Index(t, `:\/\/`)
	switch {
	case j >= 0 && (k < 0 || j < k):
		return j, 5
	case k >= 0:
		return k, 3
	}
	return -1, 0
}

// hasScheme says whether s, the text before "://", ends in a URL scheme:
// a letter, then letters, digits, "+", "-" or ".".
func hasScheme(s string) bool {
	i := len(s)
	for i > 0 && isSchemeChar(s[i-1]) {
		i--
	}
	for i < len(s) && !isLetter(s[i]) {
		// A scheme starts with a letter: "1git+ssh" is "git+ssh" after
		// something else.
		i++
	}
	return i < len(s)
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isSchemeChar(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// cvsMethod is the start of a CVS root, :method: or :method;options:,
// not in the middle of a word.
var cvsMethod = regexp.MustCompile(`(?i)(?:^|[^a-z0-9]):(?:pserver|ext|extssh|gserver|kserver|server|sspi|ssh|fork|local)(?:;[^:@/]*)?:`)

// cvsRoots hides the user and password of every CVS root in t:
// :pserver:user:password@host:port/path keeps :pserver:***@host:port/path.
func cvsRoots(t string) string {
	ms := cvsMethod.FindAllStringIndex(t, -1)
	if ms == nil {
		return t
	}
	var b strings.Builder
	from := 0
	for _, m := range ms {
		if m[0] < from {
			continue
		}
		// The host is after the last "@" before the path, which starts at
		// the first "/" (host:/path, host:port/path, host/path).
		e := len(t)
		if n := strings.IndexByte(t[m[1]:], '/'); n >= 0 {
			e = m[1] + n
		}
		b.WriteString(t[from:m[1]])
		if at := strings.LastIndexByte(t[m[1]:e], '@'); at >= 0 {
			b.WriteString(Hidden)
			b.WriteString(t[m[1]+at : e])
		} else {
			b.WriteString(t[m[1]:e])
		}
		from = e
	}
	b.WriteString(t[from:])
	return b.String()
}

// scpLike hides the user and password of an scp-like address,
// user:password@host:path, that t starts with. An address without a
// password (git@host:path) is left as it is.
func scpLike(t string) string {
	e := len(t)
	if n := strings.IndexByte(t, '/'); n >= 0 {
		e = n
	}
	at := strings.LastIndexByte(t[:e], '@')
	if at <= 0 {
		return t
	}
	user, rest := t[:at], t[at+1:e]
	host, _, ok := strings.Cut(rest, ":")
	if !ok || host == "" || !strings.Contains(user, ":") || strings.HasPrefix(user, ":") || !isHost(host) {
		return t
	}
	return Hidden + t[at:]
}

// isHost says whether s may be a host name or a bracketed address.
func isHost(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLetter(c) && !('0' <= c && c <= '9') && !strings.ContainsRune(".-_[]", rune(c)) {
			return false
		}
	}
	return true
}

// JSON hides, as URLs does, the credentials in every string of the JSON
// text s, escaped or not ("\u0040" is "@"), and leaves the rest as it was
// written. Text that is not JSON is redacted as text.
func JSON(s string) string {
	if !json.Valid([]byte(s)) {
		return URLs(s)
	}
	var b strings.Builder
	from := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		// In valid JSON a quote outside a string opens one; find where it
		// closes.
		j := i + 1
		for s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		lit := s[i : j+1]
		var v string
		if json.Unmarshal([]byte(lit), &v) == nil {
			if r := URLs(v); r != v {
				b.WriteString(s[from:i])
				b.WriteString(quote(r))
				from = j + 1
			}
		}
		i = j
	}
	b.WriteString(s[from:])
	return b.String()
}

// quote writes v as a JSON string, with <, > and & as themselves.
func quote(v string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// Origin is what may be shown of the URL u when its path and query may be
// secret too, as in a webhook's URL: its scheme, host and port. It is ""
// when u is no URL with a host.
func Origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	return p.Scheme + "://" + p.Host
}

// URL hides in s the URL u, wherever s repeats it whole or in part (its
// path, query or user information), leaving only its Origin, and then
// every credential as URLs does.
func URL(s, u string) string {
	if u == "" {
		return URLs(s)
	}
	origin := Origin(u)
	s = strings.ReplaceAll(s, u, origin)
	if p, err := url.Parse(u); err == nil {
		// As Go writes it back, escaped its own way.
		s = strings.ReplaceAll(s, p.String(), origin)
		parts := []string{p.RequestURI(), p.EscapedPath(), p.Path, p.RawQuery, p.Fragment}
		if p.User != nil {
			parts = append(parts, p.User.String())
		}
		for _, part := range parts {
			if len(part) > 1 {
				s = strings.ReplaceAll(s, part, "…")
			}
		}
	}
	return URLs(s)
}
