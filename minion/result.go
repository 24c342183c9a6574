package minion

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"lorrycontroller.dev/lc/wire"
)

// resultFD is the descriptor that lorry is given for its result
// (lorry --result-fd): the first of proc.Command.ExtraFiles.
const resultFD = 3

// maxResultBytes bounds what the minion reads of a result. lorry bounds
// the refs it names, so only a broken lorry writes more.
const maxResultBytes = 16 << 20

// lorryResult is where lorry says what a job's run found, so that the
// final update can pass it on: a file of the minion's, with no name,
// open for lorry as resultFD. lorry may run as another user (the
// minion's --job-user), who can read no file of the minion's, and the
// minion opens no path that a job can choose or reach: it reads back
// what lorry wrote to the descriptor it was handed.
type lorryResult struct {
	f *os.File
}

// newLorryResult makes the result file of job j, in the minion's job
// directory, and removes its name at once: only the descriptors of the
// minion and of lorry reach it.
func (m *Minion) newLorryResult(j *job) (lorryResult, error) {
	f, err := os.CreateTemp(m.jobDir(), strconv.FormatInt(j.ID, 10)+"-result-*")
	if err != nil {
		return lorryResult{}, fmt.Errorf("make result file of job %d: %w", j.ID, err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return lorryResult{}, fmt.Errorf("make result file of job %d: %w", j.ID, err)
	}
	return lorryResult{f: f}, nil
}

func (r lorryResult) close() { r.f.Close() }

// read reads what lorry found for the final update of job j: the branch
// that the upstream's HEAD named, and the refs the run changed, when the
// job succeeded and lorry named them; the error class lorry gave
// its failure, when it failed. A lorry that wrote no result, or one that
// cannot be read, is logged and means none of them, never a failed job.
func (r lorryResult) read(log *slog.Logger, j *job, exit int) (head string, refs *wire.RefChanges, class string) {
	var data []byte
	_, err := r.f.Seek(0, io.SeekStart)
	if err == nil {
		data, err = io.ReadAll(io.LimitReader(r.f, maxResultBytes+1))
	}
	if err == nil && len(data) == 0 {
		log.Info("lorry wrote no result")
		return "", nil, ""
	}
	if err == nil && len(data) > maxResultBytes {
		err = fmt.Errorf("more than %d bytes", maxResultBytes)
	}
	var res wire.ResultFile
	if err == nil {
		err = json.Unmarshal(data, &res)
	}
	if err != nil {
		log.Warn("cannot read lorry's result", "err", err)
		return "", nil, ""
	}
	// The WEBAPP names the spec after the lorry's path; a spec named
	// otherwise is still the job's only one.
	spec, ok := res.Lorries[j.Path]
	if !ok && len(res.Lorries) == 1 {
		for _, s := range res.Lorries {
			spec = s
		}
	}
	if exit != 0 {
		return "", nil, spec.ErrorClass
	}
	if !spec.OK {
		return "", nil, ""
	}
	if spec.Refs != nil {
		// lorry bounds their number, so only refs of very long names
		// make them larger than the WEBAPP takes; those are dropped
		// rather than refused. Fields the WEBAPP does not know were
		// dropped by decoding, so are not sent.
		data, err := json.Marshal(spec.Refs)
		switch {
		case err != nil:
			log.Warn("cannot encode lorry's ref changes", "err", err)
		case len(data) > wire.MaxRefsBytes:
			log.Warn("lorry's ref changes are too large to report", "bytes", len(data), "max_bytes", wire.MaxRefsBytes)
		default:
			refs = spec.Refs
		}
	}
	return spec.Head, refs, ""
}
