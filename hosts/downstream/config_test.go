package downstream

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"lorrycontroller.dev/lc/flagconf"
)

func TestDownstreamFlagDefaults(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := Config{
		Type: "none", Visibility: "private", PushProtocol: "ssh", SSHCommand: "ssh", Timeout: time.Minute,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", c, want)
	}
	if err := fs.Parse([]string{"--downstream-check-certificates=false"}); err != nil {
		t.Fatal(err)
	}
	if !c.SkipCertificateCheck {
		t.Errorf("--downstream-check-certificates=false left SkipCertificateCheck false")
	}
	if err := fs.Parse([]string{"--downstream-check-certificates"}); err != nil {
		t.Fatal(err)
	}
	if c.SkipCertificateCheck {
		t.Errorf("--downstream-check-certificates left SkipCertificateCheck true")
	}
}

// The WEBAPP's configuration file sets the same keys as the flags.
func TestDownstreamConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "webapp.conf")
	conf := "[config]\n" +
		"downstream-host-type = gitlab\n" +
		"downstream-host = https://gitlab.example.com/git\n" +
		"downstream-token-file = /etc/lorry-controller/gitlab-token\n" +
		"downstream-visibility = internal\n" +
		"downstream_push_protocol = https\n" +
		"downstream-check-certificates = false\n" +
		"downstream-timeout = 30s\n"
	if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	var c Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	fs.String("config", "", "")
	if err := flagconf.Parse(fs, []string{"--config", file, "--downstream-visibility", "public"}, "config"); err != nil {
		t.Fatal(err)
	}
	want := Config{
		Type: "gitlab", Host: "https://gitlab.example.com/git", TokenFile: "/etc/lorry-controller/gitlab-token",
		Visibility: "public", PushProtocol: "https", SSHCommand: "ssh", SkipCertificateCheck: true, Timeout: 30 * time.Second,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("config:\n got %+v\nwant %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestDownstreamConfigValidate(t *testing.T) {
	gitlab := func(mod func(c *Config)) Config {
		c := Config{Type: "gitlab", Host: "gitlab.example.com", TokenFile: "/t"}
		if mod != nil {
			mod(&c)
		}
		return c
	}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // empty: valid
	}{
		{name: "zero is none", cfg: Config{}},
		{name: "none", cfg: Config{Type: "none"}},
		{name: "local", cfg: Config{Type: "local", LocalBaseDir: "/srv/git"}},
		{name: "local without directory", cfg: Config{Type: "local"}, wantErr: "needs --local-base-directory"},
		{name: "unknown type", cfg: Config{Type: "github"}, wantErr: `--downstream-host-type "github": want none, local, gitlab, gitea, gerrit or gitano`},
		{name: "gitlab", cfg: gitlab(nil)},
		{name: "gitea with token", cfg: Config{Type: "gitea", Host: "https://gitea.example.com", Token: "x"}},
		{name: "gitlab without host", cfg: gitlab(func(c *Config) { c.Host = "" }), wantErr: "needs --downstream-host"},
		{name: "gitlab without token", cfg: gitlab(func(c *Config) { c.TokenFile = "" }), wantErr: "needs --downstream-token-file"},
		{name: "both tokens", cfg: gitlab(func(c *Config) { c.Token = "x" }), wantErr: "not both"},
		{name: "bad visibility", cfg: gitlab(func(c *Config) { c.Visibility = "secret" }), wantErr: `--downstream-visibility "secret": want private, internal or public`},
		{name: "bad protocol", cfg: gitlab(func(c *Config) { c.PushProtocol = "git" }), wantErr: `--downstream-push-protocol "git": want ssh or https`},
		{name: "ftp URL", cfg: gitlab(func(c *Config) { c.Host = "ftp://gitlab.example.com" }), wantErr: "want an http or https URL"},
		{name: "URL with credentials", cfg: gitlab(func(c *Config) { c.Host = "https://root:hunter2@gitlab.example.com" }), wantErr: "no credentials"},
		{name: "URL with query", cfg: gitlab(func(c *Config) { c.Host = "https://gitlab.example.com/?x=1" }), wantErr: "without query"},
		{name: "negative timeout", cfg: gitlab(func(c *Config) { c.Timeout = -time.Second }), wantErr: "--downstream-timeout must be positive"},
		{name: "gerrit", cfg: Config{Type: "gerrit", Host: "gerrit.example.com"}},
		{name: "gitano", cfg: Config{Type: "gitano", Host: "trove.example.com", SSHUser: "git", SSHPort: 22}},
		{name: "gerrit without host", cfg: Config{Type: "gerrit"}, wantErr: "needs --downstream-host, the ssh host name"},
		{name: "gerrit host with port", cfg: Config{Type: "gerrit", Host: "gerrit.example.com:29418"}, wantErr: "--downstream-ssh-port"},
		{name: "gerrit host as an option", cfg: Config{Type: "gerrit", Host: "-oProxyCommand=x"}, wantErr: "want a host name"},
		{name: "gitano bad user", cfg: Config{Type: "gitano", Host: "trove.example.com", SSHUser: "-l"}, wantErr: "--downstream-ssh-user"},
		{name: "gitano bad port", cfg: Config{Type: "gitano", Host: "trove.example.com", SSHPort: 70000}, wantErr: "--downstream-ssh-port 70000"},
		{name: "gerrit over https", cfg: Config{Type: "gerrit", Host: "gerrit.example.com", PushProtocol: "https"}, wantErr: "over ssh only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("Validate = %v; want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Validate = %v; want an error containing %q", err, tc.wantErr)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Errorf("Validate = %v; shows the password", err)
			}
		})
	}
}

func TestNewDownstreamTypes(t *testing.T) {
	token := writeDSTokenFile(t, "tok")
	tests := []struct {
		name string
		cfg  Config
		want any
	}{
		{name: "none", cfg: Config{}, want: None{}},
		{name: "local", cfg: Config{Type: "local", LocalBaseDir: "/srv/git"}, want: Local{BaseDir: "/srv/git"}},
		{name: "gitlab", cfg: Config{Type: "gitlab", Host: "gitlab.example.com", TokenFile: token}, want: &GitLab{}},
		{name: "gitea", cfg: Config{Type: "gitea", Host: "gitea.example.com", Token: "tok"}, want: &Gitea{}},
		{name: "gerrit", cfg: Config{Type: "gerrit", Host: "gerrit.example.com"}, want: &Gerrit{}},
		{name: "gitano", cfg: Config{Type: "gitano", Host: "trove.example.com"}, want: &Gitano{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if reflect.TypeOf(d) != reflect.TypeOf(tc.want) {
				t.Errorf("New = %T; want %T", d, tc.want)
			}
			if _, isLocal := tc.want.(Local); isLocal && d != tc.want {
				t.Errorf("New = %+v; want %+v", d, tc.want)
			}
		})
	}
}

func TestNewDownstreamTokenFile(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	twoLines := filepath.Join(dir, "two")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	os.WriteFile(twoLines, []byte("abc\ndef\n"), 0o600)
	tests := []struct{ name, file, wantErr string }{
		{name: "missing", file: filepath.Join(dir, "nope"), wantErr: "read --downstream-token-file"},
		{name: "empty", file: empty, wantErr: "is empty"},
		{name: "two lines", file: twoLines, wantErr: "more than one line"},
	}
	for _, tc := range tests {
		_, err := New(Config{Type: "gitea", Host: "gitea.example.com", TokenFile: tc.file})
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s: New = %v; want an error containing %q", tc.name, err, tc.wantErr)
		}
	}
}

// answerJSON writes the answer of a server that is not one of the fakes.
func answerJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// gitlabDSOneProject answers every GET of a project with one that exists.
func gitlabDSOneProject(w http.ResponseWriter, r *http.Request) {
	answerJSON(w, http.StatusOK, map[string]any{
		"id": 1, "path_with_namespace": "delta/foo", "default_branch": "main",
		"ssh_url_to_repo": "git@gitlab.example.com:delta/foo.git", "http_url_to_repo": "https://gitlab.example.com/delta/foo.git",
	})
}

func TestDownstreamCheckCertificates(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(gitlabDSOneProject))
	// The refused handshake is expected; keep it out of the test output.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	// httptest's certificate is signed by no authority the system trusts.
	for _, skip := range []bool{false, true} {
		d, err := New(Config{Type: "gitlab", Host: srv.URL, Token: "tok", SkipCertificateCheck: skip})
		if err != nil {
			t.Fatal(err)
		}
		url, err := d.Prepare(context.Background(), Repo{Path: "delta/foo"})
		switch {
		case !skip && (err == nil || !strings.Contains(err.Error(), "certificate")):
			t.Errorf("with checks: Prepare = %q, %v; want a certificate error", url, err)
		case skip && err != nil:
			t.Errorf("without checks: Prepare: %v", err)
		}
	}
}

// The token travels in a header, which net/http would forward to any
// server that a redirect names.
func TestDownstreamRefusesRedirectToAnotherServer(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("PRIVATE-TOKEN"))
		mu.Unlock()
		gitlabDSOneProject(w, r)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
	}))
	defer srv.Close()
	d, err := New(Config{Type: "gitlab", Host: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	url, err := d.Prepare(context.Background(), Repo{Path: "delta/foo"})
	if err == nil || !strings.Contains(err.Error(), "redirected to another server") {
		t.Errorf("Prepare = %q, %v; want a redirect error", url, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) != 0 {
		t.Errorf("the other server was asked, with token %q", leaked)
	}
}

// An answer that is not the API's JSON, such as a proxy's page, still
// gives its status and some of its text.
func TestDownstreamNonJSONError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html><body>\n  upstream   connect error\n</body></html>")
	}))
	defer srv.Close()
	d, err := New(Config{Type: "gitea", Host: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Prepare(context.Background(), Repo{Path: "delta/foo"})
	want := "Gitea GET /api/v1/repos/delta/foo: 502 Bad Gateway: <html><body> upstream connect error </body></html>"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Prepare error = %v; want it to end with %q", err, want)
	}
}
