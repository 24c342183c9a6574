// Package atomicfile replaces files whole: a reader, or the file system
// after a crash, finds either the old content or the new, never a part or
// an empty file.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces name with data, with permissions perm exactly (the
// umask does not narrow them). The data goes to a temporary file in the
// same directory, which is synced before it is renamed over name, and the
// directory is synced after: without the first sync a crash soon after
// the rename can leave an empty file under the new name, and without the
// second the rename itself may not last. Whatever happens, no temporary
// file stays behind.
//
// An error is an *fs.PathError naming name, never the temporary file, so
// that callers can show its cause without paths.
func WriteFile(name string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(name)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".*")
	if err != nil {
		return pathError(name, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return pathError(name, err)
	}
	d, err := os.Open(dir)
	if err == nil {
		err = d.Sync()
		d.Close()
	}
	if err != nil {
		return pathError(name, fmt.Errorf("sync directory: %w", cause(err)))
	}
	return nil
}

// pathError says that writing name failed because of err, with err's
// own paths (the temporary file's) left out.
func pathError(name string, err error) error {
	return &fs.PathError{Op: "write", Path: name, Err: cause(err)}
}

// cause is err without the path or paths that the os package puts around
// the reason.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
