// Package secretfile reads the one-line secrets the programs are given in
// files (API tokens), and says when such a file is open to others.
package secretfile

import (
	"bytes"
	"fmt"
	"os"
)

// Read returns the secret in the file at path: its one line, without
// surrounding space. warning is set when others than the file's owner and
// group may read or write it, which the caller logs: the secret should be
// changed, since anyone on the machine may have it.
func Read(path string) (secret, warning string, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("read secret: %w", err)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "", "", fmt.Errorf("secret file %s is empty", path)
	}
	if bytes.ContainsAny(data, "\r\n") {
		return "", "", fmt.Errorf("secret file %s holds more than one line", path)
	}
	return string(data), Check(path), nil
}

// Check says, in a sentence for the log, whether the file at path may be
// read or written by others than its owner and group; "" if not, or if it
// cannot be told.
func Check(path string) string {
	info, err := os.Stat(path)
	if err != nil {
		return ""
	}
	if mode := info.Mode().Perm(); mode&0o007 != 0 {
		return fmt.Sprintf("%s holds a secret and is open to every user (mode %03o): chmod o= %s, and replace the secret", path, mode, path)
	}
	return ""
}
