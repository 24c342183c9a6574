package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
)

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
