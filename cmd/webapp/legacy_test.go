package main

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestOriginalConfigFile(t *testing.T) {
	tests := []struct {
		name         string
		file         string
		args         []string
		wantErr      string
		wantListen   string
		wantType     string
		wantGhost    time.Duration
		wantWarnings []string
	}{
		{
			name: "the original WEBAPP's file",
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
`,
			wantListen: "127.0.0.1:12766", wantType: "local", wantGhost: 6 * time.Hour,
			wantWarnings: []string{":2: log is ignored", ":7: wsgi is ignored", ":9: templates is ignored",
				":11: git-server-type is read as downstream-host-type"},
		},
		{name: "debug-host and debug-port", file: "debug-host = 0.0.0.0\ndebug-port = 80\n", wantListen: "0.0.0.0:80",
			wantType: "none", wantGhost: 15 * time.Minute},
		{name: "listen wins over the original keys", file: "debug-port = 80\n", args: []string{"--listen", "127.0.0.1:9"},
			wantListen: "127.0.0.1:9", wantType: "none", wantGhost: 15 * time.Minute},
		{name: "bad port", file: "debug-port = eighty\n", wantErr: `:1: debug-port: "eighty" is not a port number`},
		{name: "a key of neither program", file: "debug-prot = 80\n", wantErr: `:1: unknown key "debug-prot"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conf := filepath.Join(t.TempDir(), "webapp.conf")
			if err := os.WriteFile(conf, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := parseFlags(append(tc.args, "--config", conf), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Listen != tc.wantListen || cfg.Downstream.Type != tc.wantType || cfg.GhostTimeout != tc.wantGhost {
				t.Errorf("listen %q, downstream %q, ghost-timeout %v; want %q %q %v",
					cfg.Listen, cfg.Downstream.Type, cfg.GhostTimeout, tc.wantListen, tc.wantType, tc.wantGhost)
			}
			if len(cfg.Warnings) != len(tc.wantWarnings) {
				t.Fatalf("warnings %q; want %d like %q", cfg.Warnings, len(tc.wantWarnings), tc.wantWarnings)
			}
			for i, w := range tc.wantWarnings {
				if !strings.Contains(cfg.Warnings[i], w) {
					t.Errorf("warning %q; want one containing %q", cfg.Warnings[i], w)
				}
			}
		})
	}
}

// TestInstalledConfigFile checks the webapp.conf that make install puts in
// /etc: it is read without a warning, and it shows every flag.
func TestInstalledConfigFile(t *testing.T) {
	path := filepath.Join("..", "..", "etc", "webapp.conf")
	cfg, err := parseFlags([]string{"--config", path}, io.Discard)
	if err != nil || len(cfg.Warnings) > 0 {
		t.Fatalf("parse %s: %v %q", path, err, cfg.Warnings)
	}
	if !strings.HasPrefix(cfg.StateDB, "/var/lib/lorry-controller/") {
		t.Errorf("statedb = %q; want it under /var/lib/lorry-controller", cfg.StateDB)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	key := regexp.MustCompile(`^#?([a-z][a-z-]*) =`)
	mentioned := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := key.FindStringSubmatch(sc.Text()); m != nil {
			mentioned[m[1]] = true
		}
	}
	// The usage output lists every flag; parseFlags keeps its flag set to
	// itself.
	var all []string
	var usage strings.Builder
	parseFlags([]string{"--help"}, &usage)
	for _, line := range strings.Split(usage.String(), "\n") {
		if strings.HasPrefix(line, "  -") {
			name := strings.Fields(strings.TrimPrefix(line, "  -"))[0]
			all = append(all, name)
		}
	}
	if len(all) < 10 {
		t.Fatalf("found only flags %q in --help", all)
	}
	for _, name := range all {
		if name != "config" && !mentioned[name] {
			t.Errorf("%s does not mention %s", path, name)
		}
		delete(mentioned, name)
	}
	for name := range mentioned {
		t.Errorf("%s mentions %s, which is no flag", path, name)
	}
}
