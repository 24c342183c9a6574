package flagconf

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// originalFlags are flags of each program that the original's files set.
func originalFlags(o Original) *flag.FlagSet {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("config", "", "")
	fs.String("log-level", "info", "")
	if o.AddressIsURL {
		fs.String("webapp-url", "http://127.0.0.1:12765", "")
		fs.Duration("sleep", 10*time.Second, "")
		return fs
	}
	fs.String("listen", "127.0.0.1:12765", "")
	fs.String("statedb", "lorry-controller.db", "")
	fs.String("configuration-directory", "confgit", "")
	fs.String("status-html", "", "")
	fs.String("confgit-url", "", "")
	fs.String("downstream-host-type", "none", "")
	fs.String("downstream-token", "", "")
	fs.String("local-base-directory", "", "")
	fs.Duration("ghost-timeout", 15*time.Minute, "")
	return fs
}

func TestParseOriginal(t *testing.T) {
	tests := []struct {
		name         string
		orig         Original
		file         string
		args         []string
		wantErr      string
		want         map[string]string // flag values
		wantWarnings []string
	}{
		{
			name: "the original WEBAPP's file", orig: OriginalWebapp,
			file: `[config]
log = syslog
log-level = debug
statedb = /home/lorry/webapp.db
configuration-directory = /home/lorry/confgit
status-html = /home/lorry/lc-status.html
wsgi = yes
debug-port = 12766
templates = /usr/share/lorry-controller/templates
confgit-url = http://localhost/git/lorries
git-server-type = local
local-base-directory = /srv/git
ghost-timeout = 21600
gitlab-private-token = /etc/token
`,
			want: map[string]string{"listen": "127.0.0.1:12766", "downstream-host-type": "local", "ghost-timeout": "6h0m0s",
				"log-level": "debug", "downstream-token": "/etc/token"},
			wantWarnings: []string{":2: log is ignored: " + logReason, ":7: wsgi is ignored: the WEBAPP serves HTTP itself",
				":9: templates is ignored", ":11: git-server-type is read as downstream-host-type",
				":14: gitlab-private-token is read as downstream-token"},
		},
		{name: "debug-host and debug-port", orig: OriginalWebapp, file: "debug-host = 0.0.0.0\ndebug-port = 80\n",
			want: map[string]string{"listen": "0.0.0.0:80", "downstream-host-type": "none", "ghost-timeout": "15m0s"}},
		{name: "debug-port 0 picks a free port", orig: OriginalWebapp, file: "debug-port = 0\n",
			want: map[string]string{"listen": "127.0.0.1:0"}},
		{name: "listen wins over the original keys", orig: OriginalWebapp, file: "debug-port = 80\n", args: []string{"--listen", "127.0.0.1:9"},
			want: map[string]string{"listen": "127.0.0.1:9"}},
		{name: "listen in the file wins too", orig: OriginalWebapp, file: "debug-host = 0.0.0.0\nlisten = 127.0.0.1:8\n",
			want: map[string]string{"listen": "127.0.0.1:8"}},
		{name: "bad debug-port", orig: OriginalWebapp, file: "debug-port = eighty\n", wantErr: `:1: debug-port: "eighty" is not a port number`},
		{name: "a key of neither program", orig: OriginalWebapp, file: "debug-prot = 80\n", wantErr: `:1: unknown key "debug-prot"`},
		{name: "a minion's key in the WEBAPP's file", orig: OriginalWebapp, file: "webapp-timeout = 3600\n", wantErr: `:1: unknown key "webapp-timeout"`},
		{
			name: "the original MINION's file", orig: OriginalMinion,
			file: "[config]\nlog = syslog\nwebapp-host = localhost\nwebapp-timeout = 3600\nlog-level = warning\nsleep = 30\n",
			want: map[string]string{"webapp-url": "http://localhost:12765", "log-level": "warning", "sleep": "30s"},
			wantWarnings: []string{":2: log is ignored: " + logReason,
				":4: webapp-timeout is ignored: each request to the WEBAPP times out after 30s"},
		},
		{name: "webapp-host and webapp-port", orig: OriginalMinion, file: "webapp-host = webapp.example\nwebapp-port = 8080\n",
			want: map[string]string{"webapp-url": "http://webapp.example:8080"}},
		{name: "webapp-port alone", orig: OriginalMinion, file: "webapp-port = 12766\n",
			want: map[string]string{"webapp-url": "http://127.0.0.1:12766"}},
		{name: "webapp-url wins over the original keys", orig: OriginalMinion, file: "webapp-host = x\n", args: []string{"--webapp-url", "https://w"},
			want: map[string]string{"webapp-url": "https://w"}},
		{name: "bad webapp-port", orig: OriginalMinion, file: "webapp-port = http\n", wantErr: `:1: webapp-port: "http" is not a port number`},
		{name: "webapp-port 0", orig: OriginalMinion, file: "webapp-port = 0\n", wantErr: `:1: webapp-port: "0" is not a port number`},
		{name: "a WEBAPP's key in the minion's file", orig: OriginalMinion, file: "wsgi = yes\n", wantErr: `:1: unknown key "wsgi"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.conf")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			fs := originalFlags(tc.orig)
			warnings, err := ParseOriginal(fs, append(tc.args, "--config", path), "config", tc.orig)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				if got := fs.Lookup(name).Value.String(); got != want {
					t.Errorf("%s = %q; want %q", name, got, want)
				}
			}
			if len(warnings) != len(tc.wantWarnings) {
				t.Fatalf("warnings %q; want %d like %q", warnings, len(tc.wantWarnings), tc.wantWarnings)
			}
			for i, w := range tc.wantWarnings {
				if !strings.HasPrefix(warnings[i], path+":") || !strings.Contains(warnings[i], w) {
					t.Errorf("warning %q; want %s%s...", warnings[i], path, w)
				}
			}
		})
	}
}
