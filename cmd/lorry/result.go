package main

import (
	"encoding/json"
	"fmt"

	"lorrycontroller.dev/lc/atomicfile"
	"lorrycontroller.dev/lc/mirror"
	"lorrycontroller.dev/lc/wire"
)

// resultFile is what --result-file holds after a run.
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
