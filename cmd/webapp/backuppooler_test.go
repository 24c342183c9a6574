package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb/dbtest"
	"lorrycontroller.dev/lc/wire"
)

// TestBackupThroughPooler runs a WEBAPP, as installed with a backup
// directory, on a PostgreSQL STATEDB that it reaches through pgbouncer
// in transaction mode (dbtest.Pooled). Without backup-statedb, the
// WEBAPP warns at start that backups will fail, and POST /1.0/backup and
// the backup command fail saying which setting to set, after which the
// WEBAPP still answers through the pooler; with backup-statedb naming
// the database on the server itself, both back up, and the backup,
// restored on the server itself as docs/operations.md says, serves a
// WEBAPP through the pooler.
func TestBackupThroughPooler(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "confgit-origin")
	makeRepo(t, repo, map[string]string{
		"lorry-controller.conf": `[{"type": "lorries", "prefix": "pool", "globs": ["pool.lorry"], "interval": "1h"}]` + "\n",
		"pool.lorry":            specs("pool", 4),
	})
	addr := dbtest.Pooled(t)
	backups := filepath.Join(dir, "backups")
	conf := filepath.Join(dir, "webapp.conf")
	writeConf := func(extra string) {
		t.Helper()
		text := "statedb = " + addr + "\nbackup-directory = " + backups + "\n" + extra
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--config", conf, "--statedb", addr, "--confgit-url", repo, "--insecure-no-auth"}

	writeConf("")
	wdir := filepath.Join(dir, "refused")
	if err := os.Mkdir(wdir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := startWebapp(t, wdir, startOpts{args: args})
	if code, m := postJSON(t, w.url+"/1.0/read-configuration", nil); code != 200 {
		t.Fatalf("read-configuration = %d %v", code, m)
	}
	code, m := postJSON(t, w.url+"/1.0/backup", nil)
	if msg, _ := m["error"].(string); code != 409 || !strings.Contains(msg, "backup-statedb") {
		t.Errorf("backup through the pooler = %d %v; want 409 naming backup-statedb", code, m)
	}
	code, out, errOut := runWebapp(t, "backup", "--config", conf, filepath.Join(dir, "refused.pgdump"))
	if code != 1 || !strings.Contains(errOut, "backup-statedb") {
		t.Errorf("backup command through the pooler = %d\n%s%s\nwant 1, naming backup-statedb", code, out, errOut)
	}
	if left, _ := filepath.Glob(filepath.Join(backups, "*")); len(left) != 0 {
		t.Errorf("refused backups left %q", left)
	}
	if _, err := os.Stat(filepath.Join(dir, "refused.pgdump")); err == nil {
		t.Error("the refused backup command left its file")
	}
	queue := listQueue(t, w.url)
	if len(queue) != 4 {
		t.Errorf("queue after the refused backups: %q; want the 4 lorries", queue)
	}
	w.stop(t)
	if log := w.log(t); !strings.Contains(log, "backups will fail") || !strings.Contains(log, "backup-statedb") {
		t.Errorf("the WEBAPP's log says nothing at start of the backups that will fail:\n%s", log)
	}

	writeConf("backup-statedb = " + dbtest.Direct(t, addr) + "\n")
	wdir = filepath.Join(dir, "backed-up")
	if err := os.Mkdir(wdir, 0o755); err != nil {
		t.Fatal(err)
	}
	w = startWebapp(t, wdir, startOpts{args: args})
	if strings.Contains(w.log(t), "backups will fail") {
		t.Errorf("the WEBAPP warns of backups with backup-statedb set:\n%s", w.log(t))
	}
	code, m = postJSON(t, w.url+"/1.0/backup", nil)
	if code != 200 || m["integrity"] != "ok" {
		t.Fatalf("backup with backup-statedb = %d %v", code, m)
	}
	apiFile := filepath.Join(backups, m["file"].(string))
	cliFile := filepath.Join(dir, "cli.pgdump")
	code, out, errOut = runWebapp(t, "backup", "--config", conf, cliFile)
	if code != 0 || !strings.Contains(out, "integrity: ok\n") {
		t.Fatalf("backup command with backup-statedb = %d\n%s%s", code, out, errOut)
	}
	if got := listQueue(t, w.url); !slices.Equal(got, queue) {
		t.Errorf("queue after the backups: %q; want %q", got, queue)
	}
	w.stop(t)

	for _, file := range []string{apiFile, cliFile} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			to := dbtest.Pooled(t)
			if out, err := exec.Command("pg_restore", "--clean", "--if-exists", "--no-owner", "--dbname", dbtest.Direct(t, to), file).CombinedOutput(); err != nil {
				t.Fatalf("pg_restore: %v\n%s", err, out)
			}
			rdir := filepath.Join(dir, "restored-"+filepath.Base(file))
			if err := os.Mkdir(rdir, 0o755); err != nil {
				t.Fatal(err)
			}
			r := startWebapp(t, rdir, startOpts{args: []string{"--statedb", to, "--confgit-url", repo, "--insecure-no-auth"}})
			defer r.stop(t)
			if got := listQueue(t, r.url); !slices.Equal(got, queue) {
				t.Errorf("restored queue: %q; want %q", got, queue)
			}
			form := wire.JobRequest{Minion: "after", Host: "h", PID: 1}.Form()
			if code, m := postJSON(t, r.url+"/1.0/give-me-job", form); code != 200 {
				t.Errorf("give-me-job on the restored database = %d %v", code, m)
			}
		})
	}
}

// listQueue is the run queue that the WEBAPP at u lists.
func listQueue(t *testing.T, u string) []string {
	t.Helper()
	code, m := getJSON(t, u+"/1.0/list-queue")
	if code != 200 {
		t.Fatalf("list-queue = %d %v", code, m)
	}
	var paths []string
	list, _ := m["queue"].([]any)
	for _, p := range list {
		paths = append(paths, fmt.Sprint(p))
	}
	return paths
}
