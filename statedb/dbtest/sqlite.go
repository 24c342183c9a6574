package dbtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// SQLite is a new SQLite STATEDB file for t, whatever the backend under
// test: tests that run on both backends in one run use it. If Main was
// given a prepare function, which must then take a file's path as well as
// a PostgreSQL address (as statedb.Migrate does), it is a copy of a file
// that prepare made once, as Database's are copies of one database.
func SQLite(t testing.TB) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "state.db")
	if prepare == nil {
		return file
	}
	sqliteOnce.Do(func() { sqliteTemplate, sqliteErr = makeSQLiteTemplate() })
	if sqliteErr != nil {
		t.Fatalf("prepare the template SQLite file: %v", sqliteErr)
	}
	if err := copyFile(sqliteTemplate, file); err != nil {
		t.Fatal(err)
	}
	return file
}

var (
	sqliteOnce     sync.Once
	sqliteTemplate string
	sqliteErr      error
)

// makeSQLiteTemplate runs prepare on a new file in a temporary directory,
// which stopServer removes.
func makeSQLiteTemplate() (string, error) {
	dir, err := os.MkdirTemp("", "lcsqlite")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "state.db")
	if err := prepare(context.Background(), file); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	// Closed, the database is whole in its file: no write-ahead log is
	// left beside it to copy.
	if _, err := os.Stat(file + "-wal"); err == nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("%s left a write-ahead log", file)
	}
	return file, nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// removeSQLiteTemplate removes the template file, if one was made.
func removeSQLiteTemplate() {
	if sqliteTemplate != "" {
		os.RemoveAll(filepath.Dir(sqliteTemplate))
	}
}
