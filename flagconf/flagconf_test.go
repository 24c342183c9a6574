package flagconf

import (
	"flag"
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
