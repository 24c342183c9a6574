package downstream

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

func TestGitanoDownstreamPrepare(t *testing.T) {
	tests := []struct {
		name     string
		config   func(c *Config)
		stderr   string
		exit     int
		wantArgs []string
		wantURL  string
		wantErr  []string
	}{
		{
			name:     "created",
			wantArgs: []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=60", "--", "git@trove.example.com", "create", "delta/gnome/glib"},
			wantURL:  "ssh://git@trove.example.com/delta/gnome/glib.git",
		},
		{
			name:     "already exists",
			stderr:   "Repository delta/gnome/glib already exists\n",
			exit:     1,
			wantArgs: []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=60", "--", "git@trove.example.com", "create", "delta/gnome/glib"},
			wantURL:  "ssh://git@trove.example.com/delta/gnome/glib.git",
		},
		{
			name:     "port",
			config:   func(c *Config) { c.SSHPort = 2022 },
			wantArgs: []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=60", "-p", "2022", "--", "git@trove.example.com", "create", "delta/gnome/glib"},
			wantURL:  "ssh://git@trove.example.com:2022/delta/gnome/glib.git",
		},
		{
			name:     "refused",
			stderr:   "You may not create delta/gnome/glib\n",
			exit:     1,
			wantArgs: []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=60", "--", "git@trove.example.com", "create", "delta/gnome/glib"},
			wantErr:  []string{"create Gitano repository delta/gnome/glib", "ssh git@trove.example.com create delta/gnome/glib", "exit status 1", "You may not create delta/gnome/glib"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, logPath := fakeDSSSH(t, tc.stderr, tc.exit, false)
			cfg := Config{Type: TypeGitano, Host: "trove.example.com", SSHCommand: dir + "/ssh"}
			if tc.config != nil {
				tc.config(&cfg)
			}
			d, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Prepare(context.Background(), Repo{Path: "delta/gnome/glib"})
			if calls := fakeDSSSHCalls(t, logPath); len(calls) != 1 || !reflect.DeepEqual(calls[0], tc.wantArgs) {
				t.Errorf("ssh calls:\n got %q\nwant [%q]", calls, tc.wantArgs)
			}
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Prepare = %q; want an error", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q; want it to contain %q", err, want)
					}
				}
				return
			}
			if err != nil || got != tc.wantURL {
				t.Errorf("Prepare = %q, %v; want %q", got, err, tc.wantURL)
			}
		})
	}
}
