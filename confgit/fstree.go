package confgit

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// fsTree is the tree of Parse: the files of an fs.FS. It follows no
// symbolic link, as the tree of a commit has none to follow: a link is
// neither a file nor a directory of the configuration, and nothing is
// read through one, so that a directory of files pushed by anyone (a
// checkout in CI) cannot make it read a file of the machine.
type fsTree struct{ fsys fs.FS }

// errLink is the error of a path through a symbolic link.
var errLink = fmt.Errorf("a symbolic link, which is not followed: %w", fs.ErrNotExist)

// stat is fs.Lstat of name, refused when a directory on its way is a
// symbolic link: the information of name itself, a link or not.
func (t fsTree) stat(name string) (fs.FileInfo, error) {
	parts := strings.Split(name, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		fi, err := fs.Lstat(t.fsys, dir)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s: %w", dir, errLink)
		}
	}
	return fs.Lstat(t.fsys, name)
}

func (t fsTree) conf() ([]byte, bool, error) {
	fi, err := t.stat(ConfFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, &ConfError{Section: -1, Err: errors.New("is not a regular file")}
	}
	if fi.Size() > maxFileSize {
		return nil, false, &ConfError{Section: -1, Err: errTooLarge}
	}
	data, err := fs.ReadFile(t.fsys, ConfFile)
	return data, err == nil, err
}

func (t fsTree) files() ([]string, error) {
	var out []string
	err := fs.WalkDir(t.fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && d.Name() == ".git" {
			return fs.SkipDir
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

func (t fsTree) read(name string) ([]byte, error) {
	fi, err := t.stat(name)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %w", name, errLink)
	}
	if fi.Size() > maxFileSize {
		return nil, errTooLarge
	}
	return fs.ReadFile(t.fsys, name)
}
