package downstream

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The fake ssh stands in for Gerrit's ssh daemon: create-project fails
// with "fatal: Project already exists" for a project that is there
// (https://gerrit-review.googlesource.com/Documentation/cmd-create-project.html
// for the command; the message is Gerrit's conflict error behind "fatal:").
func TestGerritDownstreamPrepare(t *testing.T) {
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
			wantArgs: []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=60", "-p", "29418", "--", "lorry@gerrit.example.com", "gerrit", "create-project", "delta/gnome/glib"},
			wantURL:  "ssh://lorry@gerrit.example.com:29418/delta/gnome/glib.git",
		},
		{
			name:     "already exists",
			stderr:   "fatal: Project already exists\n",
			exit:     1,
			wantArgs: []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=60", "-p", "29418", "--", "lorry@gerrit.example.com", "gerrit", "create-project", "delta/gnome/glib"},
			wantURL:  "ssh://lorry@gerrit.example.com:29418/delta/gnome/glib.git",
		},
		{
			name: "other user and port",
			config: func(c *Config) {
				c.SSHUser = "mirror"
				c.SSHPort = 2222
				c.Timeout = 5 * time.Second
			},
			wantArgs: []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-p", "2222", "--", "mirror@gerrit.example.com", "gerrit", "create-project", "delta/gnome/glib"},
			wantURL:  "ssh://mirror@gerrit.example.com:2222/delta/gnome/glib.git",
		},
		{
			name:     "refused",
			stderr:   "fatal: Not allowed to create project\n",
			exit:     1,
			wantArgs: []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=60", "-p", "29418", "--", "lorry@gerrit.example.com", "gerrit", "create-project", "delta/gnome/glib"},
			wantErr:  []string{"create Gerrit project delta/gnome/glib", "gerrit create-project delta/gnome/glib", "exit status 1", "fatal: Not allowed to create project"},
		},
		{
			name:     "ssh itself fails, whatever it prints",
			stderr:   "ssh: connect to host gerrit.example.com port 29418: Connection refused (and nothing already exists)\n",
			exit:     255,
			wantArgs: []string{"-o", "BatchMode=yes", "-o", "ConnectTimeout=60", "-p", "29418", "--", "lorry@gerrit.example.com", "gerrit", "create-project", "delta/gnome/glib"},
			wantErr:  []string{"ssh failed (exit 255)", "Connection refused"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, logPath := fakeDSSSH(t, tc.stderr, tc.exit, false)
			// The default program, "ssh", is found in PATH.
			t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
			cfg := Config{Type: TypeGerrit, Host: "gerrit.example.com"}
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
			if err := d.Finish(context.Background(), Repo{Path: "delta/gnome/glib", DefaultBranch: "master"}); err != nil {
				t.Errorf("Finish: %v", err)
			}
			if calls := fakeDSSSHCalls(t, logPath); len(calls) != 1 {
				t.Errorf("Finish ran ssh: %q", calls[1:])
			}
			// A repository made or found once is not asked for again.
			if again, err := d.Prepare(context.Background(), Repo{Path: "delta/gnome/glib"}); err != nil || again != tc.wantURL {
				t.Errorf("second Prepare = %q, %v; want %q", again, err, tc.wantURL)
			}
			if calls := fakeDSSSHCalls(t, logPath); len(calls) != 1 {
				t.Errorf("second Prepare ran ssh again: %q", calls[1:])
			}
		})
	}
}

func TestGerritDownstreamRefusesUnsafePath(t *testing.T) {
	dir, logPath := fakeDSSSH(t, "", 0, false)
	d, err := New(Config{Type: TypeGerrit, Host: "gerrit.example.com", SSHCommand: dir + "/ssh"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"delta/foo bar", "delta/foo;true", "-oProxyCommand=x", "delta/../x"} {
		if got, err := d.Prepare(context.Background(), Repo{Path: path}); err == nil {
			t.Errorf("Prepare(%q) = %q; want an error", path, got)
		}
	}
	if calls := fakeDSSSHCalls(t, logPath); calls != nil {
		t.Errorf("ssh ran for an unsafe path: %q", calls)
	}
}
