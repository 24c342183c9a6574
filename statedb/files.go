package statedb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// dbFileMode is the mode of a new database file. The database holds the
// hashes of the tokens, the sessions and the job output, which may show
// what the upstreams answered: it is the service user's alone. SQLite
// gives the WAL and shared-memory files the mode of the database file.
const dbFileMode = 0o600

// createPrivate creates the database file at path, empty and with
// dbFileMode whatever the umask, unless it exists. An existing file keeps
// the mode its owner gave it.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, dbFileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	// The umask can only take bits away, but say it outright.
	err = f.Chmod(dbFileMode)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}
