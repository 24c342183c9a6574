package mirror

import "testing"

func TestSplitURL(t *testing.T) {
	tests := []struct {
		url, plain, user, pass string
	}{
		{"https://u:p@h/x", "https://h/x", "u", "p"},
		{"https://u:p@ss@h:8080/x?y#z", "https://h:8080/x?y#z", "u", "p@ss"},
		{"https://u:a%2Fb%3F%23%25c@h/x", "https://h/x", "u", "a/b?#%c"},
		{`https://u"{}<>` + "`" + `:"{}<>` + "` '\\|^~[]@h/x", "https://h/x", `u"{}<>` + "`", `"{}<>` + "` '\\|^~[]"},
		{"https://u:100%@[::1]:8080/x", "https://[::1]:8080/x", "u", "100%"},
		{"static-http://u:p@h/", "static-http://h/", "u", "p"},
		{"https://h/x@y", "https://h/x@y", "", ""},
	}
	for _, tt := range tests {
		u, err := splitURL(tt.url)
		if err != nil || u.plain(false) != tt.plain || u.user != tt.user || u.password != tt.pass {
			t.Errorf("splitURL(%q) = %q, %q, %q, %v; want %q, %q, %q", tt.url, u.plain(false), u.user, u.password, err, tt.plain, tt.user, tt.pass)
		}
	}
	for _, bad := range []string{"https://u:pa/ss@h/x", "https://u:pa?ss@h/x", "https://u:pa#ss@h/x", "https://u%3Av:p@h/x", "https://u:a%0Ab@h/x"} {
		if _, err := splitURL(bad); err == nil {
			t.Errorf("splitURL(%q): no error", bad)
		}
	}
}

// A password goes only where its tool takes it from somewhere else than
// the command line; elsewhere it is refused.
func TestPasswordRefusedWhereNoToolTakesIt(t *testing.T) {
	for _, url := range []string{"ssh://u:p@h/x", "git://u:p@h/x", "git+ssh://u:p@h/x", "u:p@h:x"} {
		if _, _, err := credentials(url); err == nil {
			t.Errorf("git %q: no error", url)
		}
	}
	if _, _, err := hgCredentials("ssh://u:p@h/x"); err == nil {
		t.Errorf("hg ssh: no error")
	}
	for _, url := range []string{"https://u:pé@h/x", "https://u: p@h/x"} {
		if _, _, err := hgCredentials(url); err == nil {
			t.Errorf("hg %q: no error", url)
		}
	}
	if _, _, _, err := svnCredentials("svn+ssh://u:p@h/x"); err == nil {
		t.Errorf("svn+ssh: no error")
	}
	for _, url := range []string{"ssh://git@h/x", "git@h:x"} {
		if plain, _, err := credentials(url); err != nil || plain != url {
			t.Errorf("git %q: got %q, %v; want it kept", url, plain, err)
		}
	}
}
