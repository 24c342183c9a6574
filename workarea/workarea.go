// Package workarea maps lorry paths to the directories that hold their
// persistent working state, and measures how much disk those use. The minion
// measures a job's directory after the job; lorry keeps its state there.
package workarea

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// maxName is the longest file name common Linux file systems accept.
const maxName = 255

// longPrefix is how much of an over-long escaped name is kept before the
// hash, so that an operator can still tell which lorry a directory is for.
const longPrefix = maxName - len(longMark) - 2*sha256.Size

// longMark separates the kept prefix of an over-long name from its hash.
// Escaping never produces "%%" since each '%' it writes is followed by two
// hex digits, so hashed names cannot collide with escaped ones.
const longMark = "%%"

// emptyName stands for the empty path. Like longMark, a lone '%' is never
// produced by escaping.
const emptyName = "%"

// Name turns a lorry path such as "delta/foo/bar" into a single directory
// name. Bytes outside [A-Za-z0-9._-] become %XX (so '/' becomes %2F and '%'
// becomes %25), and a leading '.' becomes %2E, so the result is never "",
// "." or "..", never contains a separator, and distinct paths get distinct
// names. Names longer than 255 bytes keep a readable prefix followed by
// "%%" and the SHA-256 of the path.
func Name(path string) string {
	if path == "" {
		return emptyName
	}
	const hexDigits = "0123456789ABCDEF"
	b := make([]byte, 0, len(path))
	for i := 0; i < len(path); i++ {
		c := path[i]
		if plain(c) && (i > 0 || c != '.') {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&0xf])
	}
	if len(b) <= maxName {
		return string(b)
	}
	cut := longPrefix
	// Do not split an escape: a kept "%2" would be followed by "%%".
	for i := cut - 2; i < cut; i++ {
		if b[i] == '%' {
			cut = i
			break
		}
	}
	sum := sha256.Sum256([]byte(path))
	return string(b[:cut]) + longMark + hex.EncodeToString(sum[:])
}

func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// Dir is the working directory of the lorry at path inside base.
func Dir(base, path string) string {
	return filepath.Join(base, Name(path))
}

// DiskUsage returns the bytes allocated on disk to dir and everything under
// it, the way du counts them: allocated blocks rather than file sizes, hard
// links counted once, symbolic links not followed. A missing dir uses 0.
func DiskUsage(dir string) (int64, error) {
	type inode struct{ dev, ino uint64 }
	seen := make(map[inode]bool)
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				// The top is missing, or an entry vanished while we walked.
				return nil
			}
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no block count", path)
		}
		if st.Nlink > 1 && !info.IsDir() {
			key := inode{uint64(st.Dev), st.Ino}
			if seen[key] {
				return nil
			}
			seen[key] = true
		}
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		return total, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	return total, nil
}
