package webappconf

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNotifySettings(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		file       string
		wantErr    string
		wantEvents []string
		wantWarn   string
	}{
		{name: "off", wantEvents: nil},
		{name: "all events by default", args: []string{"--notify-url", "https://hooks.example/lc", "--notify-secret-file", "s"},
			wantEvents: []string{"job-failed", "lorry-hard-failed", "lorry-recovered", "refs-changed", "host-listing-failed"}},
		{name: "some events", args: []string{"--notify-url", "http://127.0.0.1:9/", "--notify-secret-file", "s",
			"--notify-events", "host-listing-failed,job-failed"},
			wantEvents: []string{"job-failed", "host-listing-failed"}},
		{name: "from the configuration file", file: "notify-url = https://hooks.example/lc\nnotify-secret-file = s\nnotify-events = refs-changed\n",
			wantEvents: []string{"refs-changed"}},
		{name: "unknown events", args: []string{"--notify-url", "https://hooks.example/lc", "--notify-secret-file", "s",
			"--notify-events", "job-failed,job-fail,refs-changed,ref-changed"},
			wantErr: `--notify-events: unknown events "job-fail", "ref-changed"`},
		{name: "no secret", args: []string{"--notify-url", "https://hooks.example/lc"}, wantErr: "--notify-url needs --notify-secret-file"},
		{name: "no URL", args: []string{"--notify-url", "hooks.example/lc", "--notify-secret-file", "s"}, wantErr: "is no http or https URL"},
		{name: "credentials hidden", args: []string{"--notify-url", "ftp://u:SEKRIT@hooks.example/SEKRIT?t=SEKRIT", "--notify-secret-file", "s"},
			wantErr: "--notify-url ftp://hooks.example…: want an http or https URL"},
		{name: "unparsable, credentials hidden", args: []string{"--notify-url", "https://u:SEKRIT@hooks.example/%zzSEKRIT", "--notify-secret-file", "s"},
			wantErr: "--notify-url is no http or https URL"},
		{name: "events without a URL", args: []string{"--notify-events", "nonsense"},
			wantWarn: "do nothing without notify-url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				conf := filepath.Join(t.TempDir(), "webapp.conf")
				if err := os.WriteFile(conf, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", conf)
			}
			cfg, err := Parse(args, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse(%q) = %v; want an error with %q", args, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "SEKRIT") {
					t.Errorf("error %q shows the URL's password", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q) = %v", args, err)
			}
			if got := strings.Join(cfg.NotifyEventNames(), ","); got != strings.Join(tc.wantEvents, ",") {
				t.Errorf("events %q; want %q", got, tc.wantEvents)
			}
			if warns := strings.Join(cfg.Warnings, "\n"); !strings.Contains(warns, tc.wantWarn) || tc.wantWarn == "" && warns != "" {
				t.Errorf("warnings %q; want %q", warns, tc.wantWarn)
			}
		})
	}
}
