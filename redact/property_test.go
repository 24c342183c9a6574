package redact

import (
	"encoding/json"
	"html"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// schemes are the URL schemes the specs' sources take.
var schemes = []string{"https", "http", "HTTPS", "git", "ssh", "svn", "svn+ssh", "static-http", "bzr", "bzr+ssh",
	"sftp", "ftp", "file"}

// cvsMethods are CVS roots' methods, in the cases people write them, with
// and without options.
var cvsMethods = []string{"pserver", "PSERVER", "Pserver", "ext", "EXT", "ssh", "extssh", "server", "gserver",
	"kserver", "sspi", "fork", "pserver;proxy=proxy.example", "ext;CVS_RSH=ssh"}

// address is a source address with user and password, as a spec may give
// it.
type address struct{ form, text string }

// addresses are user and pass in every form the specs take: raw in a URL
// of every scheme and a CVS root of every method, and in the other forms
// of URL with a few schemes.
func addresses(user, pass string) []address {
	var as []address
	for _, s := range schemes {
		as = append(as, address{s + " raw", s + "://" + user + ":" + pass + "@host.example:8080/x/repo.git"})
	}
	for _, s := range []string{"https", "svn+ssh", "static-http"} {
		as = append(as, address{s + " raw, no path", s + "://" + user + ":" + pass + "@host.example"},
			address{s + " encoded", s + "://" + url.UserPassword(user, pass).String() + "@host.example/x?y=1#z"},
			address{s + " token", s + "://" + pass + "@host.example/x"})
	}
	for _, m := range cvsMethods {
		as = append(as, address{"cvs " + m, ":" + m + ":" + user + ":" + pass + "@cvs.example:/cvsroot"})
	}
	return append(as, address{"cvs with a port", ":pserver:" + user + ":" + pass + "@cvs.example:2401/cvsroot"},
		address{"scp-like", user + ":" + pass + "@host.example:x/repo.git"},
		address{"scp-like, IPv6", user + ":" + pass + "@[::1]:repo.git"})
}

// contexts are the texts an address is shown in: a message, job output,
// JSON text and HTML.
var contexts = []struct {
	name string
	wrap func(string) string
}{
	{"alone", func(a string) string { return a }},
	{"message", func(a string) string { return "clone " + a + ": exit 128" }},
	{"labelled", func(a string) string { return "error: clone " + a + " failed" }},
	{"single quoted", func(a string) string { return "fatal: unable to access '" + a + "/': 403" }},
	{"double quoted", func(a string) string { return `Post "` + a + `": EOF` }},
	{"angle brackets", func(a string) string { return "see <" + a + "> now" }},
	{"backticks", func(a string) string { return "run `" + a + "`" }},
	{"in a word", func(a string) string { return "url=" + a + ",next" }},
	{"two lines", func(a string) string { return "fetching\r\n" + a + "\nfailed" }},
	{"JSON", func(a string) string {
		b, _ := json.Marshal(map[string]string{"error": "clone " + a + ": exit 128", "lorry": "x"})
		return string(b)
	}},
	{"HTML", func(a string) string { return "<p>clone " + html.EscapeString(a) + " failed</p>" }},
	{"HTML, named entities", func(a string) string { return "<td>" + htmlNamed.Replace(a) + "</td>" }},
}

// printable are every printable ASCII character and a few others.
func printable() []string {
	var cs []string
	for c := ' '; c <= '~'; c++ {
		cs = append(cs, string(c))
	}
	return append(cs, "é", "ß", "中", "😀", "\u00a0")
}

// leaks is the form of pass that shown holds, or "".
func leaks(shown, pass string) string { return leaksAny(shown, shownForms(pass)) }

// shownForms are the forms of pass that text may show it in.
func shownForms(pass string) []string {
	var fs []string
	for _, f := range formsOf(pass) {
		if len(f) >= MinKnown && !slices.Contains(fs, f) {
			fs = append(fs, f)
		}
	}
	return fs
}

func leaksAny(shown string, forms []string) string {
	for _, f := range forms {
		if strings.Contains(shown, f) {
			return f
		}
	}
	return ""
}

// TestEveryCharacter puts each printable character in the user and in the
// password of every form of address, shows it in every context, and finds
// the password in no form, through the parser alone and with the
// credentials known.
func TestEveryCharacter(t *testing.T) {
	for _, c := range printable() {
		for _, cred := range []struct{ user, pass string }{
			{"us" + c + "er", "Pa" + c + "ssW0rd"},
			{"deploy", c + "Pa55W0rd" + c},
		} {
			forms := shownForms(cred.pass)
			for _, a := range addresses(cred.user, cred.pass) {
				k := KnownIn(a.text)
				for _, ctx := range contexts {
					text := ctx.wrap(a.text)
					for _, r := range []struct{ how, shown string }{
						{"URLs", URLs(text)}, {"JSON", JSON(text)}, {"Known.Text", k.Text(text)}, {"Known.JSON", k.JSON(text)},
					} {
						if f := leaksAny(r.shown, forms); f != "" {
							t.Errorf("%s, %s, user %q, password %q: %s(%q) = %q, which holds %q",
								a.form, ctx.name, cred.user, cred.pass, r.how, text, r.shown, f)
						}
					}
				}
			}
		}
	}
}

// TestKnownForms finds a known password in no form that text gives it:
// percent-encoded, escaped for JSON or HTML, or in the base64 of an HTTP
// Basic authorization, where no parser would see it.
func TestKnownForms(t *testing.T) {
	for _, c := range printable() {
		user, pass := "deploy", "Pa"+c+"ssW0rd"
		for _, a := range addresses(user, pass) {
			if strings.Contains(a.form, "token") {
				continue
			}
			k := KnownIn(a.text)
			for _, text := range append(formsOf(pass),
				"Authorization: Basic "+b64(user+":"+pass),
				"the password is "+pass+" and "+url.QueryEscape(pass),
				`{"password":`+mustJSON(pass)+`}`,
				"<input value=\""+html.EscapeString(pass)+"\">") {
				if f := leaks(k.Text(text), pass); f != "" {
					t.Errorf("%s, password %q: Text(%q) = %q, which holds %q", a.form, pass, text, k.Text(text), f)
				}
			}
		}
	}
}

// TestKnownFragments hides what parsers quote of a password they cut
// short at a character that ends a part of a URL: net/url's errors, for
// every printable character in the password.
func TestKnownFragments(t *testing.T) {
	for _, c := range printable() {
		pass := "Sekr1t" + c + "m0re" + c + "Ta1l"
		for _, s := range []string{"https", "http", "svn+ssh", "static-http"} {
			a := s + "://tu:" + pass + "@127.0.0.1:9/x.tar.gz"
			_, err := url.Parse(a)
			if err == nil {
				continue
			}
			for _, msg := range []string{err.Error(), mustJSON(err.Error()), html.EscapeString(err.Error())} {
				got := KnownIn(a).Text(msg)
				for _, part := range []string{"Sekr1t", "m0re", "Ta1l"} {
					if strings.Contains(got, part) {
						t.Errorf("password %q: Text(%q) = %q, which holds %q", pass, msg, got, part)
					}
				}
			}
		}
	}
}

// TestKnownSpec gathers the credentials of every address of a spec.
func TestKnownSpec(t *testing.T) {
	spec := `{"a":{"type":"bzr","branches":{"trunk":"bzr+ssh://u:Tr#nk Pw@h/t","x":"https://v:Br/anch?Pw@h/x"}},` +
		`"b":{"type":"cvs","url":":EXT:alice:Cv\"s Pw@cvs.example:/r","module":"m"},` +
		`"c":{"type":"raw-file","urls":[{"url":"https://Tok'en<Pw>@h/f","destination":"d"}]}}`
	k := KnownInJSON(spec)
	for _, pw := range []string{"Tr#nk Pw", "Br/anch?Pw", `Cv"s Pw`, "Tok'en<Pw>"} {
		for _, text := range []string{"fetching " + pw + " now", url.QueryEscape(pw), mustJSON(pw), html.EscapeString(pw)} {
			if got := k.Text(text); strings.Contains(got, pw) || leaks(got, pw) != "" {
				t.Errorf("Text(%q) = %q, which holds the password %q", text, got, pw)
			}
		}
	}
	if got, want := k.JSON(spec), `{"a":{"type":"bzr","branches":{"trunk":"bzr+ssh://***@h/t","x":"https://***@h/x"}},`; !strings.HasPrefix(got, want) {
		t.Errorf("JSON(spec) = %s; want it to start %s", got, want)
	}
	if KnownInJSON(`{"a":{"type":"git","url":"git@h:x.git"}}`) != nil {
		t.Errorf("KnownInJSON found credentials in an address without any")
	}
}

// TestKnownSpecEnv hides each value of a scraper's env whole, whatever
// character it holds, in every form and context text may give it; a value
// shorter than MinKnown is left.
func TestKnownSpecEnv(t *testing.T) {
	for _, c := range printable() {
		secret := "Se" + c + "cr3t"
		spec := `{"s/x":{"runtime":"fn","module":"m","env":{"TOKEN":` + mustJSON(secret) + `,"LANG":"C"}}}`
		k := KnownInJSON(spec)
		for _, f := range shownForms(secret) {
			for _, ctx := range contexts {
				text := ctx.wrap("TOKEN=" + f)
				if got := k.Text(text); leaks(got, secret) != "" {
					t.Errorf("Text(%q) = %q, which holds %q", text, got, leaks(got, secret))
				}
			}
		}
		if got := k.Text("LANG=C"); got != "LANG=C" {
			t.Errorf("env value %q: Text(LANG=C) = %q; want it as it is", secret, got)
		}
	}
}

// TestWriter hides known credentials a line at a time, however the
// writes split the lines.
func TestWriter(t *testing.T) {
	const pass = "Sp lit#Pw"
	k := KnownIn("https://u:" + pass + "@h/x")
	text := "fetching https://u:" + pass + "@h/x\r\nthe password " + pass + "\nlast " + pass
	for n := 1; n < len(text); n++ {
		var b strings.Builder
		w := NewWriter(&b, k)
		for s := text; s != ""; {
			m := min(n, len(s))
			if _, err := w.Write([]byte(s[:m])); err != nil {
				t.Fatal(err)
			}
			s = s[m:]
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "lit#") || strings.Count(b.String(), "\n") != 2 {
			t.Fatalf("written %d bytes at a time: %q", n, b.String())
		}
	}
}

func b64(s string) string { return formsOf(s)[4] }

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// FuzzURLs checks, for a generated user and password in each form of
// address and each context, that the password shows in none of its forms.
func FuzzURLs(f *testing.F) {
	for i, c := range []string{"#", "'", "<", ">", "/", "?", "`", `"`, " ", "@", ":", "\\", "%40", "é"} {
		f.Add("user", "p"+c+"w", uint16(i))
		f.Add("u"+c, c, uint16(i*7))
	}
	f.Add("git", "", uint16(0))
	f.Add("a b", ": x", uint16(3))
	f.Fuzz(func(t *testing.T, user, pass string, which uint16) {
		if strings.ContainsAny(user+pass, "\r\n\x00") || !utf8.ValidString(user+pass) {
			// The specs refuse a line break in credentials.
			t.Skip()
		}
		// Marks around the password keep it from matching what lies
		// around it, such as the host or "***".
		pass = "Pw" + pass + "Zq"
		if strings.Contains(user, "Pw") || strings.Contains(user, "Zq") {
			t.Skip()
		}
		as := addresses(user, pass)
		a := as[int(which)%len(as)]
		ctx := contexts[int(which/uint16(len(as)))%len(contexts)]
		text := ctx.wrap(a.text)
		for _, r := range []struct{ how, shown string }{
			{"URLs", URLs(text)}, {"JSON", JSON(text)}, {"Known.Text", KnownIn(a.text).Text(text)},
		} {
			if f := leaks(r.shown, pass); f != "" {
				t.Errorf("%s, %s: %s(%q) = %q, which holds %q", a.form, ctx.name, r.how, text, r.shown, f)
			}
		}
		if got := URLs(URLs(text)); got != URLs(text) {
			t.Errorf("URLs is not the same twice: %q, then %q", URLs(text), got)
		}
	})
}
