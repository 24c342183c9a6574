package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"lorrycontroller.dev/lc/flock"
	"lorrycontroller.dev/lc/minion"
)

// fileState is what tells that a file was replaced or rewritten.
type fileState struct {
	path  string
	dev   uint64
	ino   uint64
	mtime time.Time
	size  int64
	err   string
}

func stateOf(path string) fileState {
	s := fileState{path: path}
	info, err := os.Stat(path)
	if err != nil {
		s.err = err.Error()
		return s
	}
	s.mtime, s.size = info.ModTime(), info.Size()
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), st.Ino
	}
	return s
}

// watched are the files whose change makes an idle minion start again: its
// own executable and its --config file, as they were when it started.
type watched struct {
	exe   string
	files []fileState
}

// watchSelf records the executable, resolved now to an absolute path: once
// the binary is replaced, /proc/self/exe names the deleted one, and a
// relative os.Args[0] would mean nothing after a change of directory.
func watchSelf(configFile string) (*watched, error) {
	exe := os.Args[0]
	var err error
	if filepath.Base(exe) == exe {
		exe, err = exec.LookPath(exe)
	}
	if err == nil {
		exe, err = filepath.Abs(exe)
	}
	if err != nil {
		return nil, fmt.Errorf("find own executable %s: %w", os.Args[0], err)
	}
	w := &watched{exe: exe, files: []fileState{stateOf(exe)}}
	if configFile != "" {
		w.files = append(w.files, stateOf(configFile))
	}
	return w, nil
}

// changed says which watched file changed since the start, if any.
func (w *watched) changed() string {
	for _, f := range w.files {
		if stateOf(f.path) != f {
			return f.path + " changed"
		}
	}
	return ""
}

// reexec replaces the minion by the program now at its executable's path,
// with the same arguments and environment. The name and working directory
// locks are close-on-exec, so the new program takes them again (lockName
// waits for the name briefly).
func (w *watched) reexec() error {
	return syscall.Exec(w.exe, os.Args, os.Environ())
}

// nameWait is how long a starting minion waits for its name: long enough
// for the minion it replaces by exec to be gone, too short to wait on a
// live minion of the same name.
const nameWait = 5 * time.Second

// lockName takes the minion's name on this machine, refusing to start
// beside another minion of the same name.
func lockName(m *minion.Minion, name string) (*flock.Lock, error) {
	deadline := time.Now().Add(nameWait)
	for {
		l, err := m.LockName()
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, flock.ErrLocked) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("another minion named %s runs here (%w); give each minion its own --name", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
