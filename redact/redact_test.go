package redact

import (
	"strings"
	"testing"
)

func TestURLs(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "password", in: "clone https://u:p@h/x failed", want: "clone https://***@h/x failed"},
		{name: "token only", in: "ssh://tok@h/x", want: "ssh://***@h/x"},
		// A password may hold white space, "/", "?" and "#": what lies
		// between a URL and the last "@" of its line may be its password.
		{name: "two", in: "a http://x:y@h b https://z@k/", want: "a http://***@k/"},
		{name: "none", in: "https://h/x and git@h:x", want: "https://***@h:x"},
		{name: "no at", in: "https://h/x and git-h:x", want: "https://h/x and git-h:x"},
		{name: "at in password", in: "https://deploy:Pa@ssw0rd@host/x.git", want: "https://***@host/x.git"},
		{name: "ats in password and user", in: "push to https://a@b:P@s@s@host:8443/x failed",
			want: "push to https://***@host:8443/x failed"},
		{name: "at in password, no path", in: "https://u:p@q@host", want: "https://***@host"},
		{name: "at in password, query", in: "https://u:p@q@host?x=1", want: "https://***@host?x=1"},
		{name: "escaped at", in: "https://u:p%40q@host/x", want: "https://***@host/x"},
		{name: "at in path", in: "https://host/~alice@x/repo", want: "https://***@x/repo"},
		{name: "at in query", in: "https://host/x?to=alice@example.com", want: "https://***@example.com"},
		{name: "scoped package", in: "https://registry.example/@scope/pkg", want: "https://***@scope/pkg"},
		{name: "quoted", in: `clone "https://u:p@q@h/x": exit 128`, want: `clone "https://***@h/x": exit 128`},
		{name: "single quoted", in: `fatal: unable to access 'https://u:p@h/x/': 403`, want: `fatal: unable to access 'https://***@h/x/': 403`},
		{name: "in a word", in: "url=https://u:p@h/x,next=svn+ssh://v:w@k/y", want: "url=https://***@k/y"},
		{name: "IPv6 host", in: "http://u:p@[::1]:8080/x", want: "http://***@[::1]:8080/x"},
		{name: "no scheme", in: "://u:p@h/x", want: "://u:p@h/x"},
		{name: "JSON text, escaped at", in: `{"url":"https://u:p\u0040q@h/x"}`, want: `{"url":"https://***@h/x"}`},
		{name: "JSON text, escaped slashes", in: `{"url":"https:\/\/u:p@h\/x"}`, want: `{"url":"https:\/\/***@h\/x"}`},
		{name: "email", in: "mail alice@example.com", want: "mail alice@example.com"},
		{name: "pserver", in: ":pserver:alice:PASSWORD@host:/cvsroot", want: ":pserver:***@host:/cvsroot"},
		{name: "pserver in text", in: "cvs login to :pserver:alice:PASSWORD@cvs.example.org:/cvsroot failed",
			want: "cvs login to :pserver:***@cvs.example.org:/cvsroot failed"},
		{name: "pserver port", in: ":pserver:alice:PA@SS:W@host:2401/cvsroot", want: ":pserver:***@host:2401/cvsroot"},
		{name: "pserver options", in: ":pserver;proxy=p.example:alice:pw@host:/cvsroot", want: ":pserver;proxy=p.example:***@host:/cvsroot"},
		{name: "pserver upper case", in: ":PSERVER:alice:pw@host:/cvsroot", want: ":PSERVER:***@host:/cvsroot"},
		{name: "ext", in: ":ext:alice@host:/cvsroot", want: ":ext:***@host:/cvsroot"},
		{name: "gserver", in: ":gserver:alice:pw@host:/cvsroot", want: ":gserver:***@host:/cvsroot"},
		{name: "kserver", in: ":kserver:alice@host/cvsroot", want: ":kserver:***@host/cvsroot"},
		{name: "sspi", in: ":sspi:alice:pw@host:/cvsroot", want: ":sspi:***@host:/cvsroot"},
		{name: "cvsroot variable", in: "CVSROOT=:pserver:alice:pw@host:/cvsroot", want: "CVSROOT=:pserver:***@host:/cvsroot"},
		{name: "cvs no user", in: ":pserver:host:/cvsroot", want: ":pserver:host:/cvsroot"},
		{name: "method in a word", in: "x:ext:alice@host/x", want: "x:ext:alice@host/x"},
		{name: "scp with password", in: "deploy:s3cret@host:repo.git", want: "***@host:repo.git"},
		{name: "scp with password holding at", in: "deploy:Pa@ss@host:/srv/repo.git", want: "***@host:/srv/repo.git"},
		{name: "scp without password", in: "git@host:path/x.git", want: "git@host:path/x.git"},
		{name: "scp user only, in text", in: "fetch alice@git.example.org:x.git", want: "fetch alice@git.example.org:x.git"},
		{name: "scp-like after a label", in: "note: alice@example.com: bounced", want: "note: ***@example.com: bounced"},
		{name: "not scp", in: "mail alice@example.com now", want: "mail alice@example.com now"},
	}
	for _, tc := range tests {
		if got := URLs(tc.in); got != tc.want {
			t.Errorf("%s: URLs(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
		if got := URLs(URLs(tc.in)); got != tc.want {
			t.Errorf("%s: URLs twice = %q; want %q", tc.name, got, tc.want)
		}
	}
}

// TestJSON redacts the strings of a spec, escaped or not, and keeps the
// rest as written.
func TestJSON(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "git", in: `{"a": {"type": "git", "url": "https://deploy:Pa@ssw0rd@host/x.git"}}`,
			want: `{"a": {"type": "git", "url": "https://***@host/x.git"}}`},
		{name: "escaped at", in: `{"a":{"type":"git","url":"https://u:p\u0040q@host/x"}}`,
			want: `{"a":{"type":"git","url":"https://***@host/x"}}`},
		{name: "escaped slashes", in: `{"a":{"type":"hg","url":"https:\/\/u:p@host\/x"}}`,
			want: `{"a":{"type":"hg","url":"https://***@host/x"}}`},
		{name: "cvs", in: `{"a":{"type":"cvs","url":":pserver:alice:PASSWORD@host:/cvsroot","module":"m"}}`,
			want: `{"a":{"type":"cvs","url":":pserver:***@host:/cvsroot","module":"m"}}`},
		{name: "bzr branches", in: `{"a":{"type":"bzr","branches":{"trunk":"bzr+ssh://u:p@h/t","x":"https://v:w@h/x"}}}`,
			want: `{"a":{"type":"bzr","branches":{"trunk":"bzr+ssh://***@h/t","x":"https://***@h/x"}}}`},
		{name: "raw-file", in: `{"a":{"type":"raw-file","urls":[{"url":"https://u:p@h/f","destination":"d"}]}}`,
			want: `{"a":{"type":"raw-file","urls":[{"url":"https://***@h/f","destination":"d"}]}}`},
		{name: "quote in string", in: `{"a":{"type":"git","url":"https://u:p@h/x","description":"say \"hi\" <b>"}}`,
			want: `{"a":{"type":"git","url":"https://***@h/x","description":"say \"hi\" <b>"}}`},
		{name: "nothing", in: `{"a":{"type":"git","url":"git@h:x.git"}}`, want: `{"a":{"type":"git","url":"git@h:x.git"}}`},
		{name: "not JSON", in: `a: {type: git, url: https://u:p@h/x}`, want: `a: {type: git, url: https://***@h/x}`},
	}
	for _, tc := range tests {
		got := JSON(tc.in)
		if got != tc.want {
			t.Errorf("%s: JSON(%s) = %s; want %s", tc.name, tc.in, got, tc.want)
		}
		for _, secret := range []string{"Pa@ss", "PASSWORD", ":p@", ":w@", "p\\u0040q"} {
			if strings.Contains(got, secret) {
				t.Errorf("%s: JSON(%s) = %s, which holds %q", tc.name, tc.in, got, secret)
			}
		}
	}
}

func TestOriginAndURL(t *testing.T) {
	const hook = "https://u:pw@hooks.example:8443/services/T0/B1/XyZsecret?token=qsecret"
	if got, want := Origin(hook), "https://hooks.example:8443"; got != want {
		t.Errorf("Origin(%q) = %q; want %q", hook, got, want)
	}
	for _, u := range []string{"", "hooks.example/x", "/x", "::"} {
		if got := Origin(u); got != "" {
			t.Errorf("Origin(%q) = %q; want \"\"", u, got)
		}
	}
	tests := []struct{ name, in, want string }{
		{name: "as given", in: `Post "` + hook + `": dial tcp: refused`, want: `Post "https://hooks.example:8443": dial tcp: refused`},
		{name: "escaped by Go", in: `Post "https://u:pw@hooks.example:8443/services/T0/B1/XyZsecret?token=qsecret": EOF`,
			want: `Post "https://hooks.example:8443": EOF`},
		{name: "path echoed", in: "answered 404: no hook at /services/T0/B1/XyZsecret", want: "answered 404: no hook at …"},
		{name: "query echoed", in: "bad token=qsecret", want: "bad …"},
		{name: "nothing", in: "answered 500", want: "answered 500"},
	}
	for _, tc := range tests {
		got := URL(tc.in, hook)
		if got != tc.want {
			t.Errorf("%s: URL(%q) = %q; want %q", tc.name, tc.in, got, tc.want)
		}
		for _, secret := range []string{"XyZsecret", "qsecret", "pw"} {
			if strings.Contains(got, secret) {
				t.Errorf("%s: URL(%q) = %q, which holds %q", tc.name, tc.in, got, secret)
			}
		}
	}
}
