package confgit

import (
	"errors"
	"io/fs"
)

// fsTree is the tree of Parse: the files of an fs.FS.
type fsTree struct{ fsys fs.FS }

func (t fsTree) conf() ([]byte, bool, error) {
	fi, err := fs.Stat(t.fsys, ConfFile)
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
	fi, err := fs.Stat(t.fsys, name)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxFileSize {
		return nil, errTooLarge
	}
	return fs.ReadFile(t.fsys, name)
}
