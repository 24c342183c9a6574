package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"lorrycontroller.dev/lc/statedb/dbtest"
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
		_, err := parseFlags(args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--statedb-password-file") {
			t.Errorf("%q: err = %v; want a refusal naming --statedb-password-file", args, err)
		} else if strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%q: the refusal shows the password: %v", args, err)
		}
	}
	c, err := parseFlags([]string{"--statedb", "postgres://lorry@db/lorry", "--statedb-password-file", "/x"}, io.Discard)
	if err != nil || c.StateDB != "postgres://lorry@db/lorry" || c.StateDBPasswordFile != "/x" {
		t.Errorf("a URL without a password: %+v, %v", c.StateDB, err)
	}
}

// TestReplicaOf names a replica by the host and port it listens on unless
// told otherwise.
func TestReplicaOf(t *testing.T) {
	r := replicaOf(Config{}, "127.0.0.1:4567")
	if !strings.HasSuffix(r.Name, ":4567") || r.URL != "http://127.0.0.1:4567" {
		t.Errorf("default replica = %+v", r)
	}
	r = replicaOf(Config{ReplicaName: "r1", ReplicaURL: "https://r1.example.org"}, "127.0.0.1:4567")
	if r.Name != "r1" || r.URL != "https://r1.example.org" {
		t.Errorf("named replica = %+v", r)
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
			c, err := parseFlags(tc.args, io.Discard)
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("parseFlags(%q) = %v; want an error with %q", tc.args, err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || c.ReplicaForget != tc.want):
				t.Errorf("parseFlags(%q) = %v, %v; want --replica-forget %v", tc.args, c.ReplicaForget, err, tc.want)
			}
		})
	}
	conf := filepath.Join(t.TempDir(), "webapp.conf")
	if err := os.WriteFile(conf, []byte("replica-forget = 2h\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := parseFlags([]string{"--config", conf}, io.Discard); err != nil || c.ReplicaForget != 2*time.Hour {
		t.Errorf("replica-forget = 2h in --config: %v, %v; want 2h", c.ReplicaForget, err)
	}
}

// TestKilledReplicaDownThenForgotten runs two WEBAPPs on one STATEDB,
// kills one with SIGKILL, and watches the other's /1.0/status list it as
// down after two lease terms, then forget it after --replica-forget.
func TestKilledReplicaDownThenForgotten(t *testing.T) {
	place := dbtest.Place(t)
	repo := filepath.Join(t.TempDir(), "confgit-origin")
	makeRepo(t, repo, map[string]string{"lorry-controller.conf": "[]\n"})
	var apps [2]*webapp
	for i := range apps {
		d := t.TempDir()
		apps[i] = startWebapp(t, d, startOpts{args: []string{"--statedb", place, "--confgit-url", repo,
			"--insecure-no-auth", "--replica-name", fmt.Sprint("r", i+1),
			"--replica-lease", "3s", "--replica-forget", "12s"}})
	}
	// states are the replicas' states in the answering WEBAPP's status,
	// each checked against the time since it was last seen.
	states := func() map[string]string {
		_, st := getJSON(t, apps[0].url+"/1.0/status?run_queue=false")
		now, _ := st["timestamp"].(float64)
		got := map[string]string{}
		list, _ := st["replicas"].([]any)
		for _, r := range list {
			r, _ := r.(map[string]any)
			name, _ := r["name"].(string)
			state, _ := r["state"].(string)
			seen, _ := r["last_seen"].(float64)
			if down := now-seen > 6; down != (state == "down") {
				t.Errorf("%s last seen %v s before the status: %q; want down exactly when that is more than two lease terms of 3s", name, now-seen, state)
			}
			got[name] = state
		}
		return got
	}
	var last map[string]string
	waitFor(t, "r1 and r2 up", func() bool {
		last = states()
		return len(last) == 2 && last["r1"] == "up" && last["r2"] == "up"
	})
	apps[1].cmd.Process.Kill()
	<-apps[1].exited
	apps[1].exited <- nil
	waitFor(t, "r2 down", func() bool {
		last = states()
		if last["r1"] == "" || last["r2"] == "" {
			t.Fatalf("states %v; want r1, and r2 listed until it is down", last)
		}
		return last["r2"] == "down"
	})
	waitFor(t, "r2 forgotten", func() bool {
		last = states()
		if last["r1"] == "" {
			t.Fatalf("states %v; want r1 listed", last)
		}
		return last["r2"] == ""
	})
}

// TestConfigurationDirectoryOfOneWebapp: a second WEBAPP told to fetch
// into the configuration-directory of a running one refuses to start,
// saying why.
func TestConfigurationDirectoryOfOneWebapp(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "confgit-origin")
	makeRepo(t, repo, map[string]string{"lorry-controller.conf": "[]\n"})
	dir := t.TempDir()
	startWebapp(t, dir, startOpts{args: []string{"--confgit-url", repo}})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	other := t.TempDir()
	cmd := exec.CommandContext(ctx, webappBin, "--statedb", filepath.Join(other, "state.db"), "--confgit-url", repo,
		"--configuration-directory", filepath.Join(dir, "confgit"), "--listen", "127.0.0.1:0")
	cmd.Env = cleanEnv()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil || err == nil || !strings.Contains(string(out), "is in use by another WEBAPP") {
		t.Errorf("a second WEBAPP on the configuration-directory of a running one: %v (timed out: %v); want it to refuse to start\n%s",
			err, ctx.Err() != nil, out)
	}
}
