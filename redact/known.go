package redact

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/url"
	"slices"
	"strings"
)

// Known hides credentials known in full, such as those of the addresses a
// spec gives, wherever text repeats them and in every form it may give
// them: as written, percent-decoded and percent-encoded, escaped for JSON
// and for HTML, and the base64 of user:password that HTTP's Basic
// authorization carries. What is left is redacted as URLs does, so a Known
// hides at least what the parser does. A nil *Known is the parser alone.
type Known struct {
	r *strings.Replacer
}

// MinKnown is the length below which a credential is not hidden as a
// string of its own, only where the parser finds it: replacing every "ab"
// of a text would hide more than it shows.
const MinKnown = 4

// KnownIn gathers the credentials of addrs, each a whole address: a URL,
// a CVS root or an scp-like address. The password is known, and the user
// where there is no password (it may be a token); user:password too.
func KnownIn(addrs ...string) *Known {
	return known(addrs, nil)
}

// known gathers the credentials of addrs, as KnownIn does, and the
// secrets, each a credential whole.
func known(addrs, secrets []string) *Known {
	var forms []string
	for _, a := range addrs {
		for _, c := range credentials(a) {
			forms = append(forms, formsOf(c)...)
		}
	}
	for _, c := range secrets {
		forms = append(forms, formsOf(c)...)
	}
	forms = slices.DeleteFunc(forms, func(f string) bool { return len(f) < MinKnown })
	if len(forms) == 0 {
		return nil
	}
	// The longest first, so that user:password goes before password.
	slices.SortFunc(forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	forms = slices.Compact(forms)
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		pairs = append(pairs, f, Hidden)
	}
	return &Known{r: strings.NewReplacer(pairs...)}
}

// KnownInSpec gathers the credentials of every string in v, a decoded
// spec (maps, lists and strings, as JSON or YAML decode to), and the value
// of every variable of an "env" object whole: a scraper's env is where a
// CONFGIT pusher gives it secrets, which it may print.
func KnownInSpec(v any) *Known {
	var addrs, secrets []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			if strings.Contains(v, "@") {
				addrs = append(addrs, v)
			}
		case map[string]any:
			if env, ok := v["env"].(map[string]any); ok {
				for _, e := range env {
					if s, ok := e.(string); ok {
						secrets = append(secrets, s)
					}
				}
			}
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return known(addrs, secrets)
}

// KnownInJSON is KnownInSpec of the JSON text of a spec, or of a file of
// specs; text that is not JSON gives none.
func KnownInJSON(text string) *Known {
	if !strings.Contains(text, "@") && !strings.Contains(text, `\u0040`) && !strings.Contains(text, `"env"`) {
		return nil
	}
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return nil
	}
	return KnownInSpec(v)
}

// Text hides k's credentials in s, then what URLs hides.
func (k *Known) Text(s string) string {
	if k != nil {
		s = k.r.Replace(s)
	}
	return URLs(s)
}

// JSON hides k's credentials in the JSON text s, then what JSON hides.
func (k *Known) JSON(s string) string {
	if k != nil {
		s = k.r.Replace(s)
	}
	return JSON(s)
}

// Error is err with k's credentials hidden in its message; errors.Is and
// errors.As still see err.
func (k *Known) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if shown := k.Text(msg); shown != msg {
		return &hiddenError{msg: shown, err: err}
	}
	return err
}

type hiddenError struct {
	msg string
	err error
}

func (e *hiddenError) Error() string { return e.msg }

// Unwrap gives err to errors.Is and errors.As; what it says is not to be
// shown.
func (e *hiddenError) Unwrap() error { return e.err }

// credentials are the secrets of the whole address a: its password and
// user:password, or its user if it has no password, with their
// fragments; none for an scp-like address without a password.
func credentials(a string) []string {
	var info string
	at := strings.LastIndexByte(a, '@')
	if at < 0 {
		return nil
	}
	switch k := addressStart(a[:at]); {
	case k >= 0:
		info = a[k:at]
	case strings.Contains(a[:at], ":"):
		// An scp-like address: its user part ends at its first ":".
		info = a[:at]
	default:
		return nil
	}
	user, pass, ok := strings.Cut(info, ":")
	if !ok {
		return append(fragments(user), user)
	}
	return append(fragments(pass), pass, info)
}

// fragments are the parts of a credential c that a program which parses
// its address the usual way takes for a host, port, path or word, and
// quotes in its errors: net/url says `invalid port ":Pa\"ss" after host`
// of https://u:Pa"ss?word@host/. They are what comes before and after each
// character that ends a part of a URL or a word of text.
func fragments(c string) []string {
	var fs []string
	for i := 0; i < len(c); i++ {
		if strings.IndexByte(cutters, c[i]) >= 0 {
			fs = append(fs, c[:i], c[i+1:])
		}
	}
	return fs
}

// cutters end a part of a URL, or a word of text.
const cutters = "/?#@:;[] \t\"'`<>\\"

// formsOf are the ways text may give the credential c.
func formsOf(c string) []string {
	vs := []string{c}
	if d, err := url.PathUnescape(c); err == nil && d != c {
		vs = append(vs, d)
	}
	if d, err := url.QueryUnescape(c); err == nil && d != c {
		vs = append(vs, d)
	}
	var forms []string
	for _, v := range vs {
		forms = append(forms, v, url.PathEscape(v), url.QueryEscape(v),
			strings.TrimPrefix(url.UserPassword("", v).String(), ":"),
			base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)))
		for _, f := range []string{v, url.PathEscape(v)} {
			forms = append(forms, jsonForms(f)...)
			forms = append(forms, html.EscapeString(f), htmlNamed.Replace(f))
		}
	}
	return forms
}

// jsonForms are s as JSON writes it inside a string, with <, > and &
// escaped or not.
func jsonForms(s string) []string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.Encode(s)
	escaped := strings.TrimSuffix(b.String(), "\n")
	return []string{escaped[1 : len(escaped)-1], strings.Trim(quote(s), `"`)}
}

// htmlNamed escapes for HTML with the named entities, as some pages and
// tools do.
var htmlNamed = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

// Writer passes what is written to it on to an io.Writer a line at a
// time, with a Known's credentials hidden in each.
type Writer struct {
	w    io.Writer
	k    *Known
	line []byte
}

// maxLine is how much of a line without an end a Writer holds back.
const maxLine = 64 << 10

// NewWriter is a Writer to w that hides k's credentials.
func NewWriter(w io.Writer, k *Known) *Writer { return &Writer{w: w, k: k} }

func (w *Writer) Write(p []byte) (int, error) {
	w.line = append(w.line, p...)
	for {
		// Progress meters end their lines with a carriage return.
		i := bytes.IndexAny(w.line, "\r\n")
		if i < 0 {
			break
		}
		if _, err := io.WriteString(w.w, w.k.Text(string(w.line[:i+1]))); err != nil {
			return 0, err
		}
		w.line = w.line[i+1:]
	}
	if len(w.line) > maxLine {
		if err := w.Flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes what is held back of a line without an end.
func (w *Writer) Flush() error {
	if len(w.line) == 0 {
		return nil
	}
	_, err := io.WriteString(w.w, w.k.Text(string(w.line)))
	w.line = nil
	return err
}
