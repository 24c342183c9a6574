package webappconf

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStateDBPasswordNotOnCommandLine refuses a PostgreSQL password on
// the command line, in --statedb or --backup-statedb, in either form of
// the flag, and takes a URL without one.
func TestStateDBPasswordNotOnCommandLine(t *testing.T) {
	for _, args := range [][]string{
		{"--statedb", "postgres://lorry:sekrit@db/lorry"},
		{"--statedb=postgres://lorry:sekrit@db/lorry"},
		{"-statedb", "postgres://lorry@db/lorry?password=sekrit"},
		{"--backup-statedb", "postgres://lorry:sekrit@db/lorry"},
		{"--backup-statedb=postgres://lorry@db/lorry?password=sekrit"},
	} {
		_, err := Parse(args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--statedb-password-file") {
			t.Errorf("%q: err = %v; want a refusal naming --statedb-password-file", args, err)
		} else if strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%q: the refusal shows the password: %v", args, err)
		}
	}
	c, err := Parse([]string{"--statedb", "postgres://lorry@db/lorry", "--statedb-password-file", "/x"}, io.Discard)
	if err != nil || c.StateDB != "postgres://lorry@db/lorry" || c.StateDBPasswordFile != "/x" {
		t.Errorf("a URL without a password: %+v, %v", c.StateDB, err)
	}
}

// TestReplicaForgetFlag: --replica-forget is a day unless said, and must
// outlast the two lease terms after which a WEBAPP not seen is down.
func TestReplicaForgetFlag(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    time.Duration
		wantErr string
	}{
		{name: "default", want: 24 * time.Hour},
		{name: "set", args: []string{"--replica-forget", "1h"}, want: time.Hour},
		{name: "just over two leases", args: []string{"--replica-lease", "3s", "--replica-forget", "7s"}, want: 7 * time.Second},
		{name: "two leases", args: []string{"--replica-lease", "3s", "--replica-forget", "6s"},
			wantErr: "--replica-forget 6s: want more than twice --replica-lease 3s"},
		{name: "under the default lease", args: []string{"--replica-forget", "20s"}, wantErr: "--replica-forget 20s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse(tc.args, io.Discard)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("Parse(%q) = %v; want an error with %q", tc.args, err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || c.ReplicaForget != tc.want):
				t.Errorf("Parse(%q) = %v, %v; want --replica-forget %v", tc.args, c.ReplicaForget, err, tc.want)
			}
		})
	}
	conf := filepath.Join(t.TempDir(), "webapp.conf")
	if err := os.WriteFile(conf, []byte("replica-forget = 2h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := Parse([]string{"--config", conf}, io.Discard); err != nil || c.ReplicaForget != 2*time.Hour {
		t.Errorf("replica-forget = 2h in --config: %v, %v; want 2h", c.ReplicaForget, err)
	}
}
