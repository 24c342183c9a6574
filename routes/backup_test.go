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

// TestBackupWritesIntoTheDirectory backs up over HTTP, on each backend:
// the WEBAPP names the file, makes it its owner's alone, checks it and
// says so, and with keep removes the oldest of its own backups of the
// kind it made and nothing else, never the one just made.
func TestBackupWritesIntoTheDirectory(t *testing.T) {
	for _, b := range []struct {
		name, suffix, other string
		place               func(t *testing.T) (string, statedb.Options)
		check               func(path string) (int, error)
	}{
		{"sqlite", ".sqlite", ".pgdump", func(t *testing.T) (string, statedb.Options) {
			return filepath.Join(t.TempDir(), "state.db"), statedb.Options{}
		},
			func(path string) (int, error) {
				integrity, version, err := statedb.CheckBackup(context.Background(), path)
				if err == nil && integrity != "ok" {
					err = fmt.Errorf("integrity %q", integrity)
				}
				return version, err
			}},
		// pg_dump reaches the server itself, which the WEBAPP may reach
		// through a pooler.
		{"postgres", ".pgdump", ".sqlite", func(t *testing.T) (string, statedb.Options) {
			place := dbtest.DatabaseOrSkip(t)
			return place, statedb.Options{BackupAddress: dbtest.Direct(t, place)}
		},
			func(path string) (int, error) { return statedb.CheckDump(context.Background(), path) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			dir := t.TempDir()
			place, dbOpts := b.place(t)
			ts := newTestServerDB(t, place, dbOpts, func(s *Server) { s.BackupDirectory = dir })
			ts.configure(t, "a/one")
			var old []string
			for i := range 8 {
				name := fmt.Sprintf("statedb-202001%02dT000000Z%s", i+1, b.suffix)
				old = append(old, name)
				if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			// Files the WEBAPP did not name are never removed, nor
			// its backups of the other backend.
			others := []string{"notes.txt", "statedb-19990101" + b.suffix, "statedb-20000101T000000Z" + b.suffix + ".bak",
				"statedb-20000101T000000Z" + b.other}
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
			if !regexp.MustCompile(`^statedb-[0-9]{8}T[0-9]{6}Z` + regexp.QuoteMeta(b.suffix) + `$`).MatchString(name) {
				t.Fatalf("backup named %q; want statedb-<UTC time>%s", name, b.suffix)
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
			if got, err := b.check(filepath.Join(dir, name)); err != nil || got != version {
				t.Errorf("the check of the backup = %d, %v; want schema version %d", got, err, version)
			}
			want := append(append(append([]string{}, others...), old[2:]...), name)
			if got := dirNames(t, dir); !slices.Equal(got, sorted(want)) {
				t.Errorf("the directory holds %q; want %q", got, sorted(want))
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

			// A backup named for a time past the clock's, as a clock
			// set back leaves: keep=1 keeps the backup just made.
			future := "statedb-20990101T000000Z" + b.suffix
			if err := os.WriteFile(filepath.Join(dir, future), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			for {
				code, m = ts.call(t, "POST", "/1.0/backup", url.Values{"keep": {"1"}})
				if code != 409 { // another in the same second
					break
				}
			}
			if code != 200 {
				t.Fatalf("backup keep=1 = %d %v", code, m)
			}
			made, _ := m["file"].(string)
			if _, err := os.Stat(filepath.Join(dir, made)); err != nil {
				t.Errorf("backup keep=1 removed the backup it made: %v", err)
			}
			if got, want := dirNames(t, dir), sorted(append(append([]string{}, others...), made)); !slices.Equal(got, want) {
				t.Errorf("after keep=1 the directory holds %q; want %q", got, want)
			}
		})
	}
}

// dirNames are the names in dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func sorted(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}

func TestBackupWithoutDirectory(t *testing.T) {
	ts := newTestServer(t)
	code, m := ts.call(t, "POST", "/1.0/backup", nil)
	if msg, _ := m["error"].(string); code != 409 || !strings.Contains(msg, "--backup-directory") {
		t.Errorf("backup without a directory = %d %v; want 409 naming --backup-directory", code, m)
	}
}

// TestBackupThroughPooler backs up a PostgreSQL STATEDB reached through
// pgbouncer in transaction mode (dbtest.Pooled), with no address on the
// server itself: 409 naming backup-statedb, no file, and the WEBAPP
// answers through the pooler after it.
func TestBackupThroughPooler(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServerOn(t, dbtest.Pooled(t), func(s *Server) { s.BackupDirectory = dir })
	ts.configure(t, "a/one")
	code, m := ts.call(t, "POST", "/1.0/backup", nil)
	if msg, _ := m["error"].(string); code != 409 || !strings.Contains(msg, "backup-statedb") {
		t.Errorf("backup through the pooler = %d %v; want 409 naming backup-statedb", code, m)
	}
	if got := dirNames(t, dir); len(got) != 0 {
		t.Errorf("a refused backup left %q", got)
	}
	if code, m := ts.call(t, "GET", "/1.0/list-queue", nil); code != 200 || !slices.Equal(toStrings(m["queue"]), []string{"a/one"}) {
		t.Errorf("list-queue after the refused backup = %d %v; want a/one", code, m)
	}
}
