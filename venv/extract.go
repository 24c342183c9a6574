package venv

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// DefaultMaxSourceSize bounds the bytes of files in a runtime's source
// archive, so that a wrong or hostile archive cannot fill the disk.
const DefaultMaxSourceSize = 256 << 20

// maxEntries bounds the number of entries in a source archive, for the
// same reason: empty files cost no bytes but still cost inodes.
const maxEntries = 100000

// extract writes the tar stream r into dir, which must exist and be empty.
//
// The archive is a tree of a git repository, so it holds directories,
// regular files and symbolic links, nothing else. An entry may not leave
// dir: no absolute names, no "..", no entry written through a symbolic
// link, and no link whose target is absolute or has a ".." in it. Links
// that only point down can never be chained to point up, however they are
// combined.
func extract(r io.Reader, dir string, maxSize int64) error {
	tr := tar.NewReader(r)
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read source archive: %w", err)
		}
		if n >= maxEntries {
			return fmt.Errorf("source archive has more than %d entries", maxEntries)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			// git archive puts the commit id here.
			continue
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		if err := realParents(dir, name); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(target, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("extract %s: %w", name, err)
			}
			if info, err := os.Lstat(target); err != nil || !info.IsDir() {
				return fmt.Errorf("extract %s: not a directory", name)
			}
		case tar.TypeReg:
			total += h.Size
			if h.Size < 0 || total > maxSize {
				return fmt.Errorf("source archive holds more than %d bytes", maxSize)
			}
			mode := os.FileMode(0o644)
			if h.Mode&0o111 != 0 {
				mode = 0o755
			}
			if err := writeFile(target, tr, h.Size, mode); err != nil {
				return fmt.Errorf("extract %s: %w", name, err)
			}
		case tar.TypeSymlink:
			if err := linkTarget(h.Linkname); err != nil {
				return fmt.Errorf("extract %s: %w", name, err)
			}
			if err := os.Symlink(h.Linkname, target); err != nil {
				return fmt.Errorf("extract %s: %w", name, err)
			}
		default:
			return fmt.Errorf("extract %s: entries of type %q are not allowed", name, h.Typeflag)
		}
	}
}

// entryName cleans an archive entry's name, refusing one that would leave
// the directory. "" means the top directory itself.
func entryName(name string) (string, error) {
	if strings.ContainsRune(name, 0) || strings.Contains(name, `\`) {
		return "", fmt.Errorf("source archive entry %q: bad character", name)
	}
	if path.IsAbs(name) {
		return "", fmt.Errorf("source archive entry %q: absolute name", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("source archive entry %q: leaves the directory", name)
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", nil
	}
	return clean, nil
}

// realParents refuses an entry whose parent directories, inside dir, are
// not plain directories: writing through a link could leave dir. Missing
// parents are made, since an archive need not list every directory.
func realParents(dir, name string) error {
	p := dir
	parts := strings.Split(name, "/")
	for _, part := range parts[:len(parts)-1] {
		p = filepath.Join(p, part)
		err := os.Mkdir(p, 0o755)
		if err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("extract %s: %w", name, err)
		}
		info, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("extract %s: %w", name, err)
		}
		if !info.IsDir() {
			return fmt.Errorf("extract %s: %s is not a directory", name, part)
		}
	}
	return nil
}

func linkTarget(target string) error {
	if target == "" || path.IsAbs(target) || strings.ContainsRune(target, 0) {
		return fmt.Errorf("link to %q: want a relative target", target)
	}
	for _, part := range strings.Split(target, "/") {
		if part == ".." {
			return fmt.Errorf("link to %q: a link may not point up", target)
		}
	}
	return nil
}

func writeFile(name string, r io.Reader, size int64, mode os.FileMode) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
