package flagconf

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		args     []string
		wantErr  string
		wantAddr string
		wantWait time.Duration
		wantFake bool
	}{
		{name: "plain", file: "listen = 1.2.3.4:5\nghost-timeout = 2h\n", wantAddr: "1.2.3.4:5", wantWait: 2 * time.Hour},
		{name: "section, comments, underscores, quotes", file: "# c\n; c\n[config]\n\nlisten = '1.2.3.4:5'\nghost_timeout=10s\ndebug-fake-time = true\n",
			wantAddr: "1.2.3.4:5", wantWait: 10 * time.Second, wantFake: true},
		{name: "command line wins", file: "listen = 1.2.3.4:5\n", args: []string{"--listen", "9.9.9.9:9"}, wantAddr: "9.9.9.9:9", wantWait: time.Hour},
		{name: "unknown key", file: "nope = 1\n", wantErr: `:1: unknown key "nope"`},
		{name: "bad value", file: "\nghost-timeout = soon\n", wantErr: ":2: ghost-timeout"},
		{name: "no equals", file: "listen\n", wantErr: ":1: want key = value"},
		{name: "other section", file: "[other]\n", wantErr: "unknown section"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.conf")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			addr := fs.String("listen", "", "")
			wait := fs.Duration("ghost-timeout", time.Hour, "")
			fake := fs.Bool("debug-fake-time", false, "")
			fs.String("config", "", "")
			err := Parse(fs, append(tc.args, "--config", path), "config")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *addr != tc.wantAddr || *wait != tc.wantWait || *fake != tc.wantFake {
				t.Errorf("got listen=%q ghost-timeout=%v fake=%v; want %q %v %v", *addr, *wait, *fake, tc.wantAddr, tc.wantWait, tc.wantFake)
			}
		})
	}
}

func TestParseWithOldKeys(t *testing.T) {
	opts := func(port *string) Options {
		return Options{
			Renamed: map[string]string{"git-server-type": "downstream-host-type"},
			// debug-fake-time is a flag too, which wins.
			Ignored: map[string]string{"wsgi": "served directly", "log": "logs go to stderr", "debug-fake-time": "no"},
			Custom: map[string]func(string) error{"debug-port": func(v string) error {
				if strings.Trim(v, "0123456789") != "" {
					return fmt.Errorf("%q is not a port", v)
				}
				*port = v
				return nil
			}},
		}
	}
	tests := []struct {
		name         string
		file         string
		args         []string
		wantErr      string
		wantWarnings []string
		wantType     string
		wantWait     time.Duration
		wantFake     bool
		wantPort     string
	}{
		{name: "original file",
			file: "[config]\nlog = syslog\nwsgi = yes\ndebug_port = 12765\ngit-server-type = local\nghost-timeout = 21600\ndebug-fake-time = yes\n",
			wantWarnings: []string{":2: log is ignored: logs go to stderr", ":3: wsgi is ignored: served directly",
				":5: git-server-type is read as downstream-host-type"},
			wantType: "local", wantWait: 6 * time.Hour, wantFake: true, wantPort: "12765"},
		{name: "renamed key loses to the command line", file: "git-server-type = local\n", args: []string{"--downstream-host-type", "none"},
			wantWarnings: []string{":1: git-server-type is read as downstream-host-type"}, wantType: "none", wantWait: time.Hour},
		{name: "a flag is never an old key", file: "debug-fake-time = true\n", wantType: "x", wantWait: time.Hour, wantFake: true},
		{name: "boolean on", file: "debug-fake-time = on\n", wantType: "x", wantWait: time.Hour, wantFake: true},
		{name: "bad custom value", file: "\n\ndebug-port = http\n", wantErr: `:3: debug-port: "http" is not a port`},
		{name: "unknown key is still an error", file: "wsgi = yes\nnot-a-key = 1\n", wantErr: `:2: unknown key "not-a-key"`},
		{name: "a negative number is not seconds", file: "ghost-timeout = -5\n", wantErr: ":1: ghost-timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "webapp.conf")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			typ := fs.String("downstream-host-type", "x", "")
			wait := fs.Duration("ghost-timeout", time.Hour, "")
			fake := fs.Bool("debug-fake-time", false, "")
			fs.String("config", "", "")
			var port string
			warnings, err := ParseWith(fs, append(tc.args, "--config", path), "config", opts(&port))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != len(tc.wantWarnings) {
				t.Fatalf("warnings = %q; want %d like %q", warnings, len(tc.wantWarnings), tc.wantWarnings)
			}
			for i, w := range tc.wantWarnings {
				if !strings.HasPrefix(warnings[i], path) || !strings.Contains(warnings[i], w) {
					t.Errorf("warning %d = %q; want %s%s...", i, warnings[i], path, w)
				}
			}
			if *typ != tc.wantType || *wait != tc.wantWait || *fake != tc.wantFake || port != tc.wantPort {
				t.Errorf("got type=%q ghost-timeout=%v fake=%v port=%q; want %q %v %v %q",
					*typ, *wait, *fake, port, tc.wantType, tc.wantWait, tc.wantFake, tc.wantPort)
			}
		})
	}
}
