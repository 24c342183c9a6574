package main

import (
	"encoding/json"
	"fmt"

	"lorrycontroller/atomicfile"
	"lorrycontroller/mirror"
)

// resultFile is what --result-file holds after a run: an entry per spec
// that was run, by spec name. It is an object so that fields can be added
// without breaking its readers.
type resultFile struct {
	Lorries map[string]specResult `json:"lorries"`
}

// specResult is what a run did to one spec.
type specResult struct {
	OK bool `json:"ok"`
	// Head is the default branch of the mirror, without refs/heads/,
	// when the run succeeded and the mirror has one.
	Head string `json:"head,omitempty"`
	// Refs are the refs the run changed downstream (in the mirror with
	// --pull-only), when the run succeeded and that is known.
	Refs *refChanges `json:"refs,omitempty"`
	// ErrorClass names the kind of a failure that an operator tells
	// apart, such as "lfs" for an LFS object that could not be mirrored.
	ErrorClass string `json:"error_class,omitempty"`
}

// maxRefsPerKind bounds each list of refChanges: a first mirror of a
// large repository creates more refs than anyone reads on a job's page.
const maxRefsPerKind = 1000

// refChanges are mirror.RefChanges as the result file holds them.
type refChanges struct {
	Created []refChange `json:"created"`
	Updated []refChange `json:"updated"`
	Deleted []refChange `json:"deleted"`
	// Truncated says that a list was cut at maxRefsPerKind.
	Truncated bool `json:"truncated,omitempty"`
}

type refChange struct {
	Ref string `json:"ref"`
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

func newRefChanges(c *mirror.RefChanges) *refChanges {
	if c == nil {
		return nil
	}
	r := &refChanges{}
	conv := func(l []mirror.RefChange) []refChange {
		if len(l) > maxRefsPerKind {
			l, r.Truncated = l[:maxRefsPerKind], true
		}
		out := make([]refChange, len(l))
		for i, c := range l {
			out[i] = refChange{Ref: c.Ref, Old: c.Old, New: c.New}
		}
		return out
	}
	r.Created, r.Updated, r.Deleted = conv(c.Created), conv(c.Updated), conv(c.Deleted)
	return r
}

func newResultFile() *resultFile {
	return &resultFile{Lorries: map[string]specResult{}}
}

func (f *resultFile) add(res mirror.Result) {
	r := specResult{OK: res.Err == nil}
	if r.OK {
		r.Head = res.Head
		r.Refs = newRefChanges(res.Refs)
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
