package routes

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"lorrycontroller.dev/lc/statedb"
	"lorrycontroller.dev/lc/statedb/dbtest"
)

// TestBackupWritesIntoTheDirectory backs up over HTTP: the WEBAPP names
// the file, makes it its owner's alone, checks it and says so, and with
// keep removes the oldest of its own backups and nothing else.
func TestBackupWritesIntoTheDirectory(t *testing.T) {
	dbtest.SkipOnPostgres(t, "backup backs up a SQLite STATEDB only")
	dir := t.TempDir()
	ts := newTestServer(t, func(s *Server) { s.BackupDirectory = dir })
	ts.configure(t, "a/one")
	var old []string
	for i := range 8 {
		name := fmt.Sprintf("statedb-202001%02dT000000Z.sqlite", i+1)
		old = append(old, name)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Files the WEBAPP did not name are never removed.
	others := []string{"notes.txt", "statedb-19990101.sqlite", "statedb-20000101T000000Z.sqlite.bak"}
	for _, name := range others {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	code, m := ts.call(t, "POST", "/1.0/backup", url.Values{"keep": {"7"}})
	if code != 200 {
		t.Fatalf("backup = %d %v", code, m)
	}
	name, _ := m["file"].(string)
	if !regexp.MustCompile(`^statedb-[0-9]{8}T[0-9]{6}Z\.sqlite$`).MatchString(name) {
		t.Fatalf("backup named %q; want statedb-<UTC time>.sqlite", name)
	}
	info, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	version, err := ts.DB.SchemaVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m["size"] != float64(info.Size()) || m["integrity"] != "ok" || m["schema_version"] != float64(version) {
		t.Errorf("backup = %v; want size %d, integrity ok, schema_version %d", m, info.Size(), version)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("backup has mode %v; want 0600", info.Mode().Perm())
	}
	if got := toStrings(m["removed"]); !slices.Equal(got, old[:2]) {
		t.Errorf("removed %v; want the two oldest, %v", got, old[:2])
	}
	integrity, _, err := statedb.CheckBackup(context.Background(), filepath.Join(dir, name))
	if err != nil || integrity != "ok" {
		t.Errorf("CheckBackup of the backup = %q, %v; want ok", integrity, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := append(append(append([]string{}, others...), old[2:]...), name)
	slices.Sort(want)
	if !slices.Equal(left, want) {
		t.Errorf("the directory holds %q; want %q", left, want)
	}

	// Without keep, nothing is removed.
	code, m = ts.call(t, "POST", "/1.0/backup", nil)
	if code != 200 && code != 409 {
		t.Fatalf("second backup = %d %v", code, m)
	}
	if code == 200 && len(toStrings(m["removed"])) != 0 {
		t.Errorf("a backup without keep removed %v", m["removed"])
	}
	if code, m := ts.call(t, "POST", "/1.0/backup", url.Values{"keep": {"-1"}}); code != 400 {
		t.Errorf("backup keep=-1 = %d %v; want 400", code, m)
	}
}

func TestBackupWithoutDirectory(t *testing.T) {
	ts := newTestServer(t)
	code, m := ts.call(t, "POST", "/1.0/backup", nil)
	if msg, _ := m["error"].(string); code != 409 || !strings.Contains(msg, "--backup-directory") {
		t.Errorf("backup without a directory = %d %v; want 409 naming --backup-directory", code, m)
	}
}
