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
// in s, whatever characters it holds. Text does not say where a password
// ends (it may hold white space, quotes, "/", "?", "#" or "@"), so each
// line is read to hide too much rather than too little:
//
//   - a URL, scheme://user:password@host/path: everything from its "//" up
//     to the last "@" of the line;
//   - a CVS root, :method:user:password@host:/path (every method, in any
//     case, with or without method options): everything from after the
//     method up to the last "@" of the line;
//   - an scp-like address with a password, user:password@host:path: from
//     the start of the word that holds the first ":" before its "@" (the
//     first not followed by a space, as the one of "error: " is), or else
//     from that first ": ", up to the "@".
//
// A user alone is hidden in a URL and a CVS root, where it may be a token,
// but not in an scp-like address (git@host:path), where it never is.
// Where the credentials are known, Known hides them more closely.
func URLs(s string) string {
	if !strings.Contains(s, "@") {
		// Every form hides what comes before an "@": most text has none.
		return s
	}
	var b strings.Builder
	for s != "" {
		n := strings.IndexAny(s, "\n\r") + 1
		if n == 0 {
			n = len(s)
		}
		b.WriteString(line(s[:n]))
		s = s[n:]
	}
	return b.String()
}

// line redacts one line of text.
func line(t string) string {
	at := strings.LastIndexByte(t, '@')
	if at < 0 {
		return t
	}
	if k := addressStart(t[:at]); k >= 0 {
		// The last "@" ends the user information of the first URL or
		// CVS root, whatever lies between.
		return scpLike(t[:k]) + Hidden + t[at:]
	}
	return scpLike(t)
}

// addressStart finds in t where the user information of its first URL or
// CVS root begins: after the "//" of scheme:// (or of the ":\/\/" of a
// URL in JSON text), or after the :method: of a CVS root; -1 if none.
func addressStart(t string) int {
	best := -1
	for from := 0; from < len(t); {
		k, sep := schemeEnd(t[from:])
		if k < 0 {
			break
		}
		k += from
		if hasScheme(t[from:k]) {
			best = k + sep
			break
		}
		from = k + sep
	}
	if m := cvsMethod.FindStringIndex(t); m != nil && (best < 0 || m[1] <= best) {
		best = m[1]
	}
	return best
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
var cvsMethod = regexp.MustCompile(`(?i)(?:^|[^a-z0-9]):(?:pserver|ext|extssh|gserver|kserver|server|sspi|ssh|fork|local)(?:;[^:\n\r]*)?:`)

// scpLike hides the user and password of every scp-like address in t,
// user:password@host:path. An address without a password (git@host:path)
// is left as it is.
func scpLike(t string) string {
	var b strings.Builder
	from := 0 // what is written of t
	for i := 0; i < len(t); i++ {
		if t[i] != '@' || !hostThenColon(t[i+1:]) {
			continue
		}
		seg := t[from:i]
		start := passwordStart(seg)
		if start < 0 || isHiddenWord(seg) {
			continue
		}
		b.WriteString(seg[:start])
		b.WriteString(Hidden)
		from = i
	}
	b.WriteString(t[from:])
	return b.String()
}

// isHiddenWord says whether seg ends in a word that is Hidden alone: the
// mark of an address already redacted.
func isHiddenWord(seg string) bool {
	rest, ok := strings.CutSuffix(seg, Hidden)
	return ok && (rest == "" || isWordEnd(rest[len(rest)-1]))
}

// hostThenColon says whether t starts with a host name or a bracketed
// address, then ":", as what follows the "@" of an scp-like address does.
func hostThenColon(t string) bool {
	n := 0
	if strings.HasPrefix(t, "[") {
		n = strings.IndexByte(t, ']') + 1
		if n == 0 {
			return false
		}
	} else {
		for n < len(t) && isHostChar(t[n]) {
			n++
		}
	}
	return n > 0 && n < len(t) && t[n] == ':'
}

// passwordStart is where the user information before an scp-like
// address's "@" is taken to begin, if it holds a password: the start of
// the word with the first ":" of seg that no space follows, or else just
// after the first ": ", since a password may start with a space (" ab"
// then shows as " ***"); -1 if seg has no ":".
func passwordStart(seg string) int {
	for j := 0; j < len(seg); j++ {
		if seg[j] == ':' && (j+1 == len(seg) || seg[j+1] != ' ') {
			for j > 0 && !isWordEnd(seg[j-1]) {
				j--
			}
			return j
		}
	}
	if j := strings.Index(seg, ": "); j >= 0 {
		return j + 2
	}
	return -1
}

// isWordEnd says whether c ends the word before it: white space, or a
// quote, bracket or sign that text puts before an address.
func isWordEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\f', '\v', '"', '\'', '`', '<', '(', '=', ',':
		return true
	}
	return false
}

func isHostChar(c byte) bool {
	return isLetter(c) || '0' <= c && c <= '9' || c == '.' || c == '-' || c == '_'
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
