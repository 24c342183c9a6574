package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/mirror"
	"lorrycontroller.dev/lc/wire"
)

// resultFile is what --result-file, or --result-fd, holds after a run.
type resultFile wire.ResultFile

func newResultFile() *resultFile {
	return &resultFile{Lorries: map[string]wire.SpecResult{}}
}

func (f *resultFile) add(res mirror.Result) {
	r := wire.SpecResult{OK: res.Err == nil}
	if r.OK {
		r.Head = res.Head
		r.Refs = res.Refs.Cut()
	} else {
		r.ErrorClass = res.ErrorClass
	}
	f.Lorries[res.Name] = r
}

// openResultFD takes the descriptor fd that lorry was given for its
// result, before anything runs, so that a wrong one fails the run at
// once. No program that lorry runs inherits it.
func openResultFD(fd int) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("--result-fd %d: %w", fd, err)
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "result"), nil
}

// writeTo writes f to w, which the minion reads once lorry has exited,
// in one write.
func (f *resultFile) writeTo(w io.Writer) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if _, err := w.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	return nil
}

// write saves f at path atomically: a reader finds the whole file from
// this run, or the file as it was, never a part.
func (f *resultFile) write(path string) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	// Only the minion that runs lorry reads it.
	if err := atomicfile.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write result file: %w", err)
	}
	return nil
}
