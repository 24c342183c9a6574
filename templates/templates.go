// Package templates holds the WEBAPP's HTML templates, embedded so that the
// binary carries everything it serves, and the functions they format
// values with.
package templates

import (
	"embed"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"
)

//go:embed *.html
var files embed.FS

// Pages are all templates, parsed once at start.
var Pages = template.Must(template.New("").Funcs(Funcs).ParseFS(files, "*.html"))

// Funcs format values for the pages. Each one returns text for the
// template to escape, except where it builds markup or a URL from numbers
// and escaped parts only.
var Funcs = template.FuncMap{
	"when":     When,
	"elapsed":  Elapsed,
	"duration": Duration,
	"size":     Size,
	"num":      Num,
	"short":    Short,
	"lorryURL": LorryURL,
	"jobURL":   JobURL,
	"button":   NewButton,
	"named":    Named,
	"withID":   WithID,
	"id":       ID,
	// healthClass is the style of a minion's health badge.
	"healthClass": func(h string) string { return strings.ReplaceAll(strings.ToLower(h), "_", "-") },
	"field":       func(name string, value any) [2]string { return [2]string{name, fmt.Sprint(value)} },
}

// deref reads an int64 or a *int64; ok is false for a nil pointer and for
// anything else.
func deref(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case *int64:
		if v == nil {
			return 0, false
		}
		return *v, true
	case int:
		return int64(v), true
	}
	return 0, false
}

// When shows the Unix time t (an int64 or *int64; nil is "never") as a
// <time> element: the time in UTC and how long before or after now it is.
// The pages' script turns it into the reader's local time; without the
// script it reads as it is.
func When(now int64, t any) template.HTML {
	v, ok := deref(t)
	if !ok {
		return "never"
	}
	u := time.Unix(v, 0).UTC()
	return template.HTML(fmt.Sprintf(`<time datetime="%s">%s (%s)</time>`,
		u.Format(time.RFC3339), u.Format("2006-01-02 15:04:05 UTC"), Relative(v-now)))
}

// Relative says how far d seconds (positive: in the future) is from now,
// in the words the pages' script uses too.
func Relative(d int64) string {
	s := d
	if s < 0 {
		s = -s
	}
	var words string
	switch {
	case s == 0:
		return "now"
	case s < 60:
		words = plural(s, "second")
	case s < 3600:
		words = plural(s/60, "minute")
	case s < 86400:
		words = plural(s/3600, "hour")
	default:
		words = plural(s/86400, "day")
	}
	if d > 0 {
		return "in " + words
	}
	return words + " ago"
}

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(n, 10) + " " + unit + "s"
}

// Elapsed is how long it is from the Unix time since to now, in an element
// the pages' script keeps counting.
func Elapsed(now, since int64) template.HTML {
	return template.HTML(fmt.Sprintf(`<span data-since="%d">%s</span>`, since, Duration(now-since)))
}

// Duration shows a number of seconds in the two largest units, the second
// left out when it is zero: "3m 12s", "2h 5m", "4d", "15m".
func Duration(secs any) string {
	s, ok := deref(secs)
	if !ok {
		return "—"
	}
	if s < 0 {
		s = 0
	}
	d, h, m := s/86400, s%86400/3600, s%3600/60
	two := func(a int64, ua string, b int64, ub string) string {
		if b == 0 {
			return fmt.Sprintf("%d%s", a, ua)
		}
		return fmt.Sprintf("%d%s %d%s", a, ua, b, ub)
	}
	switch {
	case d > 0:
		return two(d, "d", h, "h")
	case h > 0:
		return two(h, "h", m, "m")
	case m > 0:
		return two(m, "m", s%60, "s")
	}
	return fmt.Sprintf("%ds", s)
}

// Size shows a number of bytes (an int64 or *int64; nil or negative is
// unknown) in binary units.
func Size(b any) string {
	n, ok := deref(b)
	if !ok || n < 0 {
		return "—"
	}
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v := float64(n)
	for _, unit := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= 1024
		if v < 1024 || unit == "TiB" {
			if v < 10 {
				return fmt.Sprintf("%.1f %s", v, unit)
			}
			return fmt.Sprintf("%.0f %s", v, unit)
		}
	}
	return ""
}

// Num shows an integer with thousands separated: 100,000.
func Num(v any) string {
	n, ok := deref(v)
	if !ok {
		return "—"
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// Short cuts s to n characters, for commit ids.
func Short(n int, s string) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// LorryURL is the page of the lorry at path. Each segment is escaped, so
// a path holding "?", "#" or "%" still names its own page.
func LorryURL(path string) template.URL {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return template.URL("/1.0/lorry-html/" + strings.Join(segs, "/"))
}

// JobURL is the page of job id.
func JobURL(id any) string {
	n, _ := deref(id)
	return "/1.0/job-html/" + strconv.FormatInt(n, 10)
}

// Button is a form of one button that posts Fields and Back to Action.
// A page without a Back, such as the on-disk copy of the status page,
// shows no buttons: nothing there could take them.
type Button struct {
	Back    string // where to come back to after the post
	CSRF    string // the session's token against forged forms
	Action  string
	Label   string
	Class   string
	Confirm string // a question to ask first, if the script runs
	Fields  [][2]string
	// ID is the button's id, which the post comes back to as the
	// fragment of Back, so that the page puts the focus back on it.
	ID string
	// Name, if set, is what the button is called to those who do not
	// see the page: what it acts on, where Label alone (Top, Retire) is
	// the same on every row. It holds Label's words.
	Name string
}

// Form is what every button of a page posts: where to come back to, and
// the session's CSRF token, if signed in.
type Form struct {
	Back string
	CSRF string
}

// NewButton builds a Button; fields come from the field function. Its id
// is made of its action and the values of its fields, so that the button
// that acts on the same thing has the same id on the page it returns to.
func NewButton(form Form, action, label, class, confirm string, fields ...[2]string) Button {
	parts := []string{strings.TrimSuffix(strings.TrimPrefix(action, "/1.0/"), "-html")}
	for _, f := range fields {
		parts = append(parts, f[1])
	}
	return Button{Back: form.Back, CSRF: form.CSRF, Action: action, Label: label, Class: class, Confirm: confirm,
		Fields: fields, ID: ID(parts...)}
}

// Named gives b the name it is called by (Button.Name); in a template it
// follows the button: (button ... | named "Move a/b to the top").
func Named(name string, b Button) Button {
	b.Name = name
	return b
}

// WithID gives b another id, one it shares with the button that takes
// its place after the post: Stop queue's with Start queue's.
func WithID(id string, b Button) Button {
	b.ID = id
	return b
}

// ID makes an HTML id of parts, usable as a URL fragment as it is.
// Letters, digits and "-" stand for themselves, every other byte is "_"
// and two hex digits, and the parts are joined by "__", which no part can
// hold: different parts never make the same id.
func ID(parts ...string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString("__")
		}
		for j := 0; j < len(p); j++ {
			c := p[j]
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-':
				b.WriteByte(c)
			default:
				fmt.Fprintf(&b, "_%02x", c)
			}
		}
	}
	return b.String()
}
